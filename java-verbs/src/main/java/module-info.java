/**
 * java-verbs: ibverbs for Java 25 with the Foreign Function &amp; Memory API (no JNI).
 *
 * <ul>
 *   <li>{@link io.metaroce.verbs}: the verbs objects (contexts, PDs, MRs, CQs, QPs, SRQs, AHs),
 *       work requests and completions, completion channels and async events, the
 *       {@link io.metaroce.verbs.CompletionPoller} and registered buffer pools.
 *   <li>{@link io.metaroce.verbs.cm}: connection set-up (ibv_rc_pingpong's TCP exchange, the
 *       MetaRoCE daemons' rdma_cm-style service), RC parameters.
 *   <li>{@link io.metaroce.verbs.endpoint}: endpoints that own their QP and memory, with
 *       asynchronous send/receive/READ/WRITE as CompletableFutures.
 * </ul>
 *
 * Needs {@code --enable-native-access=io.metaroce.verbs} on the module path. Records JFR events
 * ({@code io.metaroce.verbs.Connect}, {@code Disconnect}, {@code CompletionError}).
 */
module io.metaroce.verbs {
    requires jdk.jfr;

    exports io.metaroce.verbs;
    exports io.metaroce.verbs.cm;
    exports io.metaroce.verbs.endpoint;
}

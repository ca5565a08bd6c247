package io.metaroce.conformance;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The suite's side of the target agent's line protocol (docs/conformance.md, "Target agent"). */
final class AgentClient implements AutoCloseable {
    /** A work completion as the agent reports it. */
    record Completion(long wrId, int status, int opcode, int byteLen, int qpn, int srcQp, int imm) {}

    private final Socket socket;
    private final BufferedReader in;
    private final PrintWriter out;
    final long mrAddr;
    final int rkey;
    final int mrBytes;

    AgentClient(String host, int port) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress(host, port), 10_000);
        socket.setSoTimeout(60_000);
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
        out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.US_ASCII);
        String[] h = call("HELLO").split(" ");
        if (!h[0].equals("mrce-agent") || !h[1].equals("1")) {
            throw new IOException("not a version-1 target agent: " + String.join(" ", h));
        }
        mrAddr = Long.parseLong(h[2]);
        rkey = (int) Long.parseLong(h[3]);
        mrBytes = Integer.parseInt(h[4]);
    }

    /** Sends one request; returns what follows "OK " (empty for a bare OK); ERR throws. */
    synchronized String call(String request) {
        out.println(request);
        try {
            String line = in.readLine();
            if (line == null) {
                throw new IOException("the agent closed the connection");
            }
            if (!line.startsWith("OK")) {
                throw new IllegalStateException("agent: " + request + " -> " + line);
            }
            return line.length() > 3 ? line.substring(3) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    int createRc() {
        return Integer.parseInt(call("RC"));
    }

    int createUd(int qkey) {
        return Integer.parseInt(call("UD " + Integer.toUnsignedString(qkey)));
    }

    void connect(
            int qpn,
            String remoteIp,
            int remoteQpn,
            int rqPsn,
            int sqPsn,
            int mtu,
            int maxDestRdAtomic,
            int minRnrTimer) {
        call("CONNECT " + qpn + " " + remoteIp + " " + remoteQpn + " " + rqPsn + " " + sqPsn + " " + mtu + " "
                + maxDestRdAtomic + " " + minRnrTimer);
    }

    void recv(int qpn, long wrId, long offset, int len) {
        call("RECV " + qpn + " " + wrId + " " + offset + " " + len);
    }

    void post(int qpn, long wrId, String op, long offset, int len, long raddr, int rkey, long... operands) {
        StringBuilder s = new StringBuilder("POST " + qpn + " " + wrId + " " + op + " " + offset + " " + len + " "
                + raddr + " " + Integer.toUnsignedString(rkey));
        for (long x : operands) {
            s.append(' ').append(x);
        }
        call(s.toString());
    }

    /** One completion within timeoutMs, or null. */
    Completion poll(long timeoutMs) {
        String r = call("POLL " + timeoutMs);
        if (r.equals("NONE")) {
            return null;
        }
        String[] f = r.split(" ");
        return new Completion(
                Long.parseLong(f[0]),
                Integer.parseInt(f[1]),
                Integer.parseInt(f[2]),
                Integer.parseInt(f[3]),
                Integer.parseInt(f[4]),
                Integer.parseInt(f[5]),
                Integer.parseInt(f[6]));
    }

    byte[] read(long offset, int len) {
        String r = call("READ " + offset + " " + len);
        return HexFormat.of().parseHex(r);
    }

    void write(long offset, byte[] data) {
        call("WRITE " + offset + " " + HexFormat.of().formatHex(data));
    }

    String state(int qpn) {
        return call("STATE " + qpn);
    }

    void destroy(int qpn) {
        call("DESTROY " + qpn);
    }

    /** A named counter of the target (docs/conformance.md), summed over the JSON objects that carry it. */
    long counter(String name) {
        String json = call("COUNTERS");
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\":(\\d+)").matcher(json);
        long sum = 0;
        boolean found = false;
        while (m.find()) {
            sum += Long.parseLong(m.group(1));
            found = true;
        }
        if (!found) {
            throw new IllegalStateException("the target reports no counter " + name);
        }
        return sum;
    }

    @Override
    public void close() throws IOException {
        try {
            call("BYE");
        } catch (RuntimeException ignored) {
            // already gone
        }
        socket.close();
    }
}

# shellcheck shell=bash
# Shared by the bin/mrce-* scripts: where things are, and how to get the
# toolchain. Source it; it defines functions and variables only.

MRCE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MRCE_JAVA_HOME="${MRCE_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
MRCE_NATIVE_DIR="$MRCE_ROOT/provider-c/build"
MRCE_PROVIDER_LIB="$MRCE_NATIVE_DIR/libmetaroce.so"
MRCE_RDMACM_LIB="$MRCE_NATIVE_DIR/libmetaroce-rdmacm.so"
MRCE_NICD_CLASSES="$MRCE_ROOT/soft-nic/target/classes"
MRCE_NICD_LIB="$MRCE_ROOT/soft-nic/target/lib"
MRCE_BUILD_STAMP="$MRCE_ROOT/target/.mrce-build-stamp"
# The daemon's JDK 25 AOT cache (bin/mrce-nicd-aot, made by bin/mrce-build): the daemon's classes
# as one jar (an AOT cache takes jars only), the cache trained on that jar and target/lib's jars,
# the JDK it was made with, and the training run's log. MRCE_NICD_AOT_DIR puts it elsewhere (tests).
MRCE_NICD_AOT_DIR="${MRCE_NICD_AOT_DIR:-$MRCE_ROOT/soft-nic/target/aot}"
MRCE_NICD_AOT_JAR="$MRCE_NICD_AOT_DIR/mrce-nicd.jar"
MRCE_NICD_AOT_CACHE="$MRCE_NICD_AOT_DIR/mrce-nicd.aot"
MRCE_NICD_AOT_JDK="$MRCE_NICD_AOT_DIR/java-home"
MRCE_SOCK_DIR_DEFAULT=/tmp/metaroce

# Debian packages the build and the tests need.
# docker.io and debootstrap: the container tests' engine and their node image
# (docker/build-image). tshark and tcpdump: WiresharkDissectorIT (tools/wireshark).
# librdmacm-dev, rdmacm-utils and qperf: libmetaroce-rdmacm.so and RdmaCmIT.
# ucx-utils, libfabric-bin, openmpi-bin, netpipe-openmpi, python3-mpi4py: MiddlewareIT (ucx_info,
# ucx_perftest, fi_info, fi_pingpong, mpirun with NetPIPE and an mpi4py allreduce).
MRCE_DEB_PACKAGES=(libibverbs-dev librdmacm-dev rdmacm-utils qperf ibverbs-utils rdma-core perftest clang llvm
	libclang-rt-14-dev libbpf-dev libxdp-dev xdp-tools linux-libc-dev iproute2 iperf3 sockperf make gcc docker.io
	debootstrap tshark tcpdump ucx-utils libfabric-bin openmpi-bin netpipe-openmpi python3-mpi4py)

mrce_say() { printf '%s: %s\n' "${MRCE_PROG:-mrce}" "$*" >&2; }
mrce_die() { mrce_say "$*"; exit 1; }

# The daemon's class path with its AOT cache: the jar, then target/lib's jars in name order. The
# training run and every run with the cache must use exactly this one.
mrce_nicd_aot_classpath() {
	local cp="$MRCE_NICD_AOT_JAR" jar
	for jar in "$MRCE_NICD_LIB"/*.jar; do
		cp+=":$jar"
	done
	printf '%s\n' "$cp"
}

# True when the AOT cache exists and belongs to this build and JDK: made with MRCE_JAVA_HOME, and
# nothing in the daemon's classes, its jar, target/lib or the script that makes it
# (bin/mrce-nicd-aot) is newer than the cache. A stale cache would not break the daemon (the JVM
# refuses it and runs without), but its jar would hold older classes than target/classes.
mrce_nicd_aot_fresh() {
	[[ -f "$MRCE_NICD_AOT_CACHE" && -f "$MRCE_NICD_AOT_JAR" && -f "$MRCE_NICD_AOT_JDK" ]] || return 1
	[[ "$(<"$MRCE_NICD_AOT_JDK")" == "$MRCE_JAVA_HOME" ]] || return 1
	[[ -z "$(find "$MRCE_NICD_CLASSES" "$MRCE_NICD_LIB" "$MRCE_NICD_AOT_JAR" "$MRCE_ROOT/bin/mrce-nicd-aot" \
		-newer "$MRCE_NICD_AOT_CACHE" -print -quit 2>/dev/null)" ]]
}

# Installs the Debian packages in MRCE_DEB_PACKAGES that are missing (and
# Maven when there is no mvn). apt-get update runs once, only when needed.
mrce_ensure_packages() {
	local missing=() pkg status
	for pkg in "${MRCE_DEB_PACKAGES[@]}"; do
		status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
		[[ "$status" == "install ok installed" ]] || missing+=("$pkg")
	done
	command -v mvn >/dev/null 2>&1 || missing+=(maven)
	((${#missing[@]} == 0)) && return 0
	mrce_say "installing missing Debian packages: ${missing[*]}"
	local sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null 2>&1 ||
			mrce_die "not root and no sudo: install ${missing[*]} first"
		sudo=(sudo)
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		mrce_die "apt-get update failed"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" || mrce_die "apt-get install ${missing[*]} failed"
}

# Java 25 for Maven and the daemon; the machine's default java is older.
mrce_java_env() {
	[[ -x "$MRCE_JAVA_HOME/bin/java" ]] ||
		mrce_die "no Java 25 at $MRCE_JAVA_HOME (set MRCE_JAVA_HOME to a JDK 25)"
	export JAVA_HOME="$MRCE_JAVA_HOME"
	export PATH="$JAVA_HOME/bin:$PATH"
	export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
}

# True when every build output exists and no source is newer than the last
# successful build.
mrce_build_is_fresh() {
	[[ -f "$MRCE_BUILD_STAMP" && -f "$MRCE_PROVIDER_LIB" && -d "$MRCE_NICD_LIB" &&
		-f "$MRCE_NICD_CLASSES/io/metaroce/nic/NicDaemon.class" ]] || return 1
	local newer
	newer="$(cd "$MRCE_ROOT" && find pom.xml provider-c abi control-plane soft-nic java-verbs java-verbs-netty java-verbs-examples conformance integration-tests \
		\( -name target -o -name build -o -name .git \) -prune -o \
		-type f -newer "$MRCE_BUILD_STAMP" -print -quit 2>/dev/null)"
	[[ -z "$newer" ]]
}

# Builds everything (no tests) unless the outputs are fresh.
mrce_build_if_needed() {
	if mrce_build_is_fresh; then
		return 0
	fi
	mrce_ensure_packages
	mrce_java_env
	mrce_say "building (mvn -B -q install -DskipTests)"
	(cd "$MRCE_ROOT" && mvn -B -q install -DskipTests) || mrce_die "build failed"
	mkdir -p "$(dirname "$MRCE_BUILD_STAMP")"
	touch "$MRCE_BUILD_STAMP"
}

# The Docker daemon for the container tests. mrce_docker_start starts dockerd
# when none answers (root only) and remembers its PID in MRCE_DOCKERD_PID;
# mrce_docker_stop stops that one only, never a daemon someone else started.
MRCE_DOCKERD_PID=""
mrce_docker_start() {
	local log="$1" i
	command -v docker >/dev/null 2>&1 || return 1
	docker info >/dev/null 2>&1 && return 0
	((EUID == 0)) && command -v dockerd >/dev/null 2>&1 || return 1
	pgrep -x dockerd >/dev/null 2>&1 && {
		mrce_say "a dockerd runs but does not answer; not starting a second one"
		return 1
	}
	mrce_say "starting dockerd (log: $log)"
	setsid dockerd >"$log" 2>&1 </dev/null &
	MRCE_DOCKERD_PID=$!
	for ((i = 0; i < 60; i++)); do
		docker info >/dev/null 2>&1 && return 0
		kill -0 "$MRCE_DOCKERD_PID" 2>/dev/null || break
		sleep 0.5
	done
	mrce_say "dockerd did not come up; its log: $(tail -5 "$log")"
	mrce_docker_stop
	return 1
}

mrce_docker_stop() {
	[[ -n "$MRCE_DOCKERD_PID" ]] || return 0
	local i
	kill -TERM "$MRCE_DOCKERD_PID" 2>/dev/null || true
	for ((i = 0; i < 60; i++)); do
		kill -0 "$MRCE_DOCKERD_PID" 2>/dev/null || break
		sleep 0.5
	done
	kill -KILL "$MRCE_DOCKERD_PID" 2>/dev/null || true
	MRCE_DOCKERD_PID=""
}

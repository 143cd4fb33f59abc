#!/bin/sh
# Install the operations tools the test suite needs, only when they are missing:
#   promtool + prometheus   Debian package `prometheus`  (config/rule checks, rule unit
#                           tests, the live Prometheus server of the integration test)
#   chromium                Debian package `chromium`    (headless screenshot of the graph page)
#   chromedriver            Debian package `chromium-driver` (the console's browser tests
#                           drive that chromium through selenium; same build, same version)
# Idempotent: with both present it does nothing (no network). Usage:
#   deploy/prometheus/install-tools.sh            # prometheus and chromium
#   deploy/prometheus/install-tools.sh prometheus # only promtool/prometheus
#
# The Debian package registers a `prometheus` service (systemd unit + /etc/init.d
# script) listening on :9090. We never want it running: packages are installed with
# a policy-rc.d that forbids starting services (the Debian-sanctioned way), the
# service is disabled where systemd exists, and any prometheus process the install
# started is stopped by its pid. Our own Prometheus servers are started by the tests
# on free loopback ports (tests/prometheus_server.py).
set -eu

want="${*:-prometheus chromium chromedriver}"
missing=""
for tool in $want; do
    case "$tool" in
        prometheus) command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 \
                        || missing="$missing prometheus" ;;
        chromium)   command -v chromium >/dev/null 2>&1 || missing="$missing chromium" ;;
        chromedriver) command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver" ;;
        *) echo "install-tools: unknown tool '$tool' (prometheus, chromium, chromedriver)" >&2; exit 2 ;;
    esac
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-tools: apt-get not found; install$missing yourself (Debian packages)" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "install-tools: need root (or sudo) to install$missing" >&2; exit 1
    fi
fi

before="$(pgrep -x prometheus || true)"
policy=/usr/sbin/policy-rc.d
created_policy=""
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, from croupier install-tools.sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    created_policy=1
fi
cleanup() { [ -n "$created_policy" ] && $SUDO rm -f "$policy"; return 0; }
trap cleanup EXIT

echo "install-tools: installing$missing (apt-get)"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null

case "$missing" in *prometheus*)
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
    # a prometheus that appeared during the install and is not one of ours (ours always
    # run from a croupier-prometheus-* temp dir) was started by the package: stop it
    for pid in $(pgrep -x prometheus || true); do
        case " $before " in *" $pid "*) continue ;; esac
        tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q croupier-prometheus && continue
        $SUDO kill "$pid" 2>/dev/null || true
    done
    command -v promtool >/dev/null 2>&1 || { echo "install-tools: promtool still missing" >&2; exit 1; }
    ;;
esac
case "$missing" in *chromium*)
    command -v chromium >/dev/null 2>&1 || { echo "install-tools: chromium still missing" >&2; exit 1; }
    ;;
esac
case "$missing" in *chromium-driver*)
    command -v chromedriver >/dev/null 2>&1 || { echo "install-tools: chromedriver still missing" >&2; exit 1; }
    ;;
esac
echo "install-tools: ok"

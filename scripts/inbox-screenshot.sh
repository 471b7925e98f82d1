#!/usr/bin/env bash
# The README's inbox picture from a real campaign: runs `pushworker-dev demo --keep` (Kafka,
# Redis, the worker, the sandbox with its inbox, `pushworker events`), waits until the inbox
# shows every notification the demo's sandbox accepted, photographs the page with headless
# Chromium, then stops the demo (SIGTERM to the process it started; it stops its children).
#
#   make build && bash scripts/inbox-screenshot.sh [OUT.png] [WIDTH,HEIGHT]
#
# Default: docs/images/inbox.png at 1360,1750. Needs the Debian package chromium; the sample
# campaign has Korean text and an emoji: fonts-nanum and fonts-noto-color-emoji draw them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/images/inbox.png}
size=${2:-1360,1750}
dev=.build/debug/pushworker-dev
chromium=${CHROMIUM:-/usr/bin/chromium}
[[ -x $dev ]] || { echo "inbox-screenshot: $dev is missing: run make build" >&2; exit 1; }
[[ -x $chromium ]] || { echo "inbox-screenshot: $chromium is missing: run scripts/install-deps.sh" >&2; exit 1; }
if command -v fc-list >/dev/null && { [[ -z $(fc-list :lang=ko) ]] || [[ -z $(fc-list :charset=1f389) ]]; }; then
    echo "inbox-screenshot: no Korean or emoji font: the picture shows boxes (apt-get install fonts-nanum fonts-noto-color-emoji)" >&2
fi

log=$(mktemp)
profile=$(mktemp -d)
"$dev" demo --keep >"$log" 2>&1 &
demo=$!
stop() {
    kill -TERM "$demo" 2>/dev/null || true
    wait "$demo" 2>/dev/null || true
    rm -rf "$log" "$profile"
}
trap stop EXIT

# The demo prints "inbox: http://127.0.0.1:PORT/" once every recipient has its result.
url=
for _ in $(seq 1 240); do
    url=$(grep -oE '^inbox: http://127\.0\.0\.1:[0-9]+/' "$log" | head -n1 | cut -d' ' -f2 || true)
    [[ -n $url ]] && break
    kill -0 "$demo" 2>/dev/null || { cat "$log" >&2; echo "inbox-screenshot: the demo stopped" >&2; exit 1; }
    sleep 0.5
done
[[ -n $url ]] || { cat "$log" >&2; echo "inbox-screenshot: no inbox address after 120 s" >&2; exit 1; }

# Every accepted notification drawn (the inbox draws in rounds), and every msgId verified.
for _ in $(seq 1 40); do
    counts=$(curl -s "${url}api/messages?limit=0" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["accepted"], d["kept"])')
    read -r accepted kept <<<"$counts"
    [[ $accepted -gt 0 && $accepted == "$kept" ]] && break
    sleep 0.25
done
curl -s "${url}api/messages" | python3 -c '
import json, sys
messages = json.load(sys.stdin)["messages"]
unverified = [m["id"] for m in messages if (m.get("msgIdFields") or {}).get("valid") is not True]
if unverified:
    sys.exit("inbox-screenshot: msgId not verified on %s" % unverified)
print("inbox-screenshot: %d notifications (%s), every msgId verified" % (len(messages), ", ".join(sorted({m["platform"] for m in messages}))), file=sys.stderr)'

# Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on fd 3,
# answers on fd 4, NUL-separated JSON): load the page, wait until it has drawn the list (it
# keeps its event stream open, so it never goes idle), photograph it.
python3 - "$chromium" "$url" "$size" "$profile" "$PWD/$out" "$kept" <<'PY'
import base64, json, os, subprocess, sys, time
chromium, url, size, profile, out, kept = sys.argv[1:]
width, height = (int(x) for x in size.split(","))
to_browser_r, to_browser_w = os.pipe()
from_browser_r, from_browser_w = os.pipe()
def child_fds():
    # Copies first: the pipes may themselves be fds 3 and 4 (dup2 onto itself keeps close-on-exec).
    read_end, write_end = os.dup(to_browser_r), os.dup(from_browser_w)
    os.dup2(read_end, 3)
    os.dup2(write_end, 4)
browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe",
                            "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height), "about:blank"],
                           close_fds=False, preexec_fn=child_fds,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(to_browser_r); os.close(from_browser_w)
buffer, next_id = b"", 0
def call(method, params=None, session=None, timeout=30):
    global buffer, next_id
    next_id += 1
    message = {"id": next_id, "method": method, "params": params or {}}
    if session: message["sessionId"] = session
    os.write(to_browser_w, json.dumps(message).encode() + b"\0")
    deadline = time.time() + timeout
    while time.time() < deadline:
        while b"\0" in buffer:
            line, buffer = buffer.split(b"\0", 1)
            answer = json.loads(line)
            if answer.get("id") == next_id:
                if "error" in answer: sys.exit("inbox-screenshot: %s: %s" % (method, answer["error"]))
                return answer.get("result", {})
        chunk = os.read(from_browser_r, 1 << 20)
        if not chunk: sys.exit("inbox-screenshot: chromium went away")
        buffer += chunk
    sys.exit("inbox-screenshot: %s: no answer" % method)
try:
    page = next(t for t in call("Target.getTargets")["targetInfos"] if t["type"] == "page")
    session = call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
    call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
    call("Page.navigate", {"url": url}, session)
    ready = "document.body && document.body.dataset.loaded && document.querySelectorAll('#list > li.message').length === %d" % int(kept)
    deadline = time.time() + 20
    while not call("Runtime.evaluate", {"expression": "!!(%s)" % ready, "returnByValue": True}, session)["result"].get("value"):
        if time.time() > deadline: sys.exit("inbox-screenshot: the page did not draw %s notifications" % kept)
        time.sleep(0.2)
    time.sleep(0.5)
    picture = call("Page.captureScreenshot", {"format": "png"}, session)["data"]
    with open(out, "wb") as file: file.write(base64.b64decode(picture))
finally:
    browser.terminate()
    browser.wait(timeout=10)
PY
echo "inbox-screenshot: wrote $out" >&2

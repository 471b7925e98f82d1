/// The inbox's single page: HTML, CSS and JavaScript served by the binary (no build step, no
/// external assets). Everything that comes from a payload is put into the DOM with
/// `textContent` (never `innerHTML`), links from payloads are shown as text, not followed,
/// and remote images are only loaded after "Load images" is switched on (the page stays
/// offline by default). `Content-Security-Policy` allows scripts and styles from the inbox only.
/// The same document serves `/` (the list) and `/m/N` (one message, its permalink).
enum InboxPage {
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' data: http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pushworker sandbox inbox</title>
<link rel="stylesheet" href="/inbox.css">
<link rel="icon" href="data:,">
</head>
<body>
<header class="top">
  <div class="brand"><span class="logo" aria-hidden="true">◉</span> pushworker <b>inbox</b>
    <span id="live" class="live off" title="live updates">offline</span></div>
  <div id="summary" class="summary"></div>
  <form id="filters" class="filters" autocomplete="off" role="search">
    <label>search <input type="search" name="q" id="f-q" size="18" placeholder="title, body, app, token, msgId…"></label>
    <label>platform <select name="platform" id="f-platform">
      <option value="">all</option><option value="ios">iOS</option><option value="android">Android</option><option value="web">Web</option><option value="huawei">Huawei</option>
    </select></label>
    <label>app <input name="app" id="f-app" list="apps" size="10"></label>
    <label>campaign <input name="campaign" id="f-campaign" list="campaigns" size="10"></label>
    <label>token <input name="token" id="f-token" size="12" placeholder="contains…"></label>
    <datalist id="apps"></datalist><datalist id="campaigns"></datalist>
    <label class="check"><input type="checkbox" id="f-images"> load images</label>
    <button type="button" id="clear" class="danger">Clear</button>
  </form>
  <nav id="single" class="single" hidden><a href="/">← all notifications</a> <span id="single-title"></span></nav>
</header>
<main>
  <section id="empty" class="empty" hidden>
    <h2>No notifications yet</h2>
    <p>Everything this sandbox accepts appears here, drawn as the device would show it.</p>
    <p>Send something:</p>
<pre>make demo                                   # a sample campaign: iOS, Android, Web
pushworker send examples/campaign.json      # with this sandbox's credentials:
#   PUSHWORKER_CREDENTIALS_DIR  (--credentials-out)   PUSHWORKER_CA_FILE (--cert-out)
#   PUSHWORKER_MSGID_KEYS       PUSHWORKER_WEBPUSH_ALLOWED_HOSTS=127.0.0.1</pre>
    <p id="empty-sandbox" class="muted"></p>
    <p id="empty-filtered" class="muted" hidden>Nothing matches the filters.</p>
  </section>
  <section id="gone" class="empty" hidden>
    <h2>This notification is not in the inbox</h2>
    <p class="muted">It was deleted, cleared, or forgotten to keep the newest (<code>--inbox-max</code>); numbers are not reused.</p>
    <p><a href="/">← all notifications</a></p>
  </section>
  <ol id="list" class="list"></ol>
</main>
<script src="/inbox.js"></script>
</body>
</html>
"""#

    static let css = #"""
:root { --bg:#f2f2f7; --card:#fff; --ink:#1c1c1e; --muted:#6b6b70; --line:#dcdce0; --accent:#0a84ff; --bad:#d70015; --ok:#248a3d;
  font-family: -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Noto Sans", sans-serif; color: var(--ink); }
* { box-sizing: border-box; }
[hidden] { display:none !important; }
body { margin:0; background:var(--bg); }
.top { position:sticky; top:0; z-index:2; background:rgba(250,250,252,.96); border-bottom:1px solid var(--line); padding:8px 16px; }
.brand { font-size:17px; display:flex; align-items:center; gap:8px; }
.logo { color:var(--accent); }
.live { font-size:11px; border-radius:10px; padding:1px 8px; margin-left:6px; }
.live.on { background:#d8f5df; color:var(--ok); } .live.off { background:#fde2e4; color:var(--bad); }
.summary { font-size:12px; color:var(--muted); margin:2px 0 6px; }
.filters { display:flex; flex-wrap:wrap; gap:6px 12px; align-items:center; font-size:13px; }
.filters input, .filters select { font:inherit; padding:3px 6px; border:1px solid var(--line); border-radius:6px; background:#fff; max-width:150px; }
.filters .check { display:flex; align-items:center; gap:4px; }
button { font:inherit; cursor:pointer; }
.danger { border:1px solid var(--line); background:#fff; color:var(--bad); border-radius:6px; padding:3px 10px; }
.single { font-size:13px; margin-top:4px; } .single a, a.permalink { color:var(--accent); text-decoration:none; }
a.permalink:hover, .single a:hover { text-decoration:underline; }
.meta h3 .delete { margin-left:auto; border:1px solid var(--line); background:#fff; color:var(--bad); border-radius:6px; font-size:11px; padding:1px 8px; font-weight:600; }
main { padding:12px 16px 40px; max-width:1200px; margin:0 auto; }
.empty { background:var(--card); border-radius:12px; padding:16px 20px; border:1px solid var(--line); }
.empty pre { background:#1c1c1e; color:#e5e5ea; padding:10px 12px; border-radius:8px; overflow-x:auto; font-size:12px; }
.muted { color:var(--muted); font-size:13px; }
.list { list-style:none; margin:0; padding:0; display:flex; flex-direction:column; gap:12px; }
.message { background:var(--card); border:1px solid var(--line); border-radius:12px; padding:12px; display:grid; grid-template-columns:minmax(280px, 420px) 1fr; gap:14px; }
.message.fresh { animation: fresh 1.2s ease-out; }
@keyframes fresh { from { box-shadow:0 0 0 3px var(--accent); } to { box-shadow:none; } }
.meta { font-size:13px; min-width:0; }
.meta h3 { margin:0 0 6px; font-size:13px; font-weight:600; color:var(--muted); display:flex; flex-wrap:wrap; gap:6px; align-items:center; }
.tag { display:inline-block; border-radius:6px; padding:1px 6px; font-size:11px; font-weight:600; background:#e5e5ea; color:#3a3a3c; }
.tag.ios { background:#e1ecff; color:#0040a0; } .tag.android { background:#dff5e3; color:#1b6b2f; } .tag.web { background:#fff0d6; color:#8a5300; }
.tag.huawei { background:#fde2e4; color:#a4000f; }
.tag.valid { background:#d8f5df; color:var(--ok); } .tag.invalid { background:#fde2e4; color:var(--bad); } .tag.unverified { background:#eee; color:var(--muted); }
.kv { display:grid; grid-template-columns:max-content 1fr; gap:2px 10px; margin:0; }
.kv dt { color:var(--muted); } .kv dd { margin:0; overflow-wrap:anywhere; }
code, .mono { font-family: "DejaVu Sans Mono", ui-monospace, monospace; font-size:12px; }
details { margin-top:8px; } summary { cursor:pointer; color:var(--accent); font-size:13px; }
details pre { white-space:pre-wrap; overflow-wrap:anywhere; background:#f7f7f9; border:1px solid var(--line); border-radius:8px; padding:8px; font-size:12px; max-height:420px; overflow:auto; }
.press { grid-column:1 / -1; font-size:12px; }
.press:empty { display:none; }
.press pre { margin:4px 0 0; white-space:pre-wrap; overflow-wrap:anywhere; background:#f7f7f9; border-radius:6px; padding:6px; }
.notes { margin:6px 0 0; padding-left:18px; color:var(--muted); font-size:12px; }
.tabs { display:flex; gap:4px; margin-bottom:6px; }
.tabs button { border:1px solid var(--line); background:#fff; border-radius:6px; font-size:12px; padding:2px 8px; }
.tabs button[aria-selected="true"] { background:var(--ink); color:#fff; border-color:var(--ink); }
/* the drawn notifications */
.surface { position:relative; }
.press-target { cursor:pointer; }
.silent { border:1px dashed var(--line); border-radius:12px; padding:10px; color:var(--muted); font-size:13px; }
.ph { display:flex; align-items:center; justify-content:center; text-align:center; background:repeating-linear-gradient(45deg,#e9e9ee,#e9e9ee 6px,#f4f4f7 6px,#f4f4f7 12px); color:var(--muted); font-size:10px; overflow:hidden; overflow-wrap:anywhere; padding:2px; }
img.ph, .ph { object-fit:cover; }
.ios .banner { background:rgba(245,245,247,.98); border-radius:16px; padding:10px 12px; box-shadow:0 1px 8px rgba(0,0,0,.12); display:grid; grid-template-columns:28px 1fr auto; gap:2px 10px; }
.ios .icon { grid-row:1 / span 3; width:28px; height:28px; border-radius:7px; background:linear-gradient(135deg,#5e5ce6,#0a84ff); color:#fff; display:flex; align-items:center; justify-content:center; font-weight:700; position:relative; }
.ios .icon .badge { position:absolute; top:-6px; right:-8px; background:#ff3b30; color:#fff; border-radius:9px; font-size:10px; padding:0 5px; min-width:16px; line-height:16px; text-align:center; }
.ios .head { display:flex; justify-content:space-between; font-size:12px; color:var(--muted); grid-column:2 / span 2; }
.ios .head .app { text-transform:uppercase; letter-spacing:.02em; }
.ios .title { font-weight:600; font-size:14px; grid-column:2; }
.ios .subtitle { font-weight:600; font-size:13px; grid-column:2; }
.ios .body { font-size:14px; grid-column:2; white-space:pre-wrap; overflow-wrap:anywhere; }
.ios .thumb { grid-column:3; grid-row:2 / span 3; width:44px; height:44px; border-radius:6px; }
.ios .actions { margin-top:6px; background:rgba(245,245,247,.98); border-radius:14px; overflow:hidden; box-shadow:0 1px 6px rgba(0,0,0,.1); }
.ios .actions button { display:block; width:100%; text-align:left; border:0; border-top:1px solid var(--line); background:transparent; padding:9px 14px; font-size:14px; color:var(--ink); }
.ios .actions button:first-child { border-top:0; }
.ios .activity { background:#1c1c1e; color:#f5f5f7; border-radius:20px; padding:12px 14px; box-shadow:0 1px 8px rgba(0,0,0,.25); }
.ios .activity .head { display:flex; justify-content:space-between; align-items:center; font-size:12px; color:#aeaeb2; margin-bottom:4px; }
.ios .activity .event { border-radius:8px; padding:0 7px; font-weight:600; color:#fff; background:#30d158; text-transform:uppercase; font-size:10px; line-height:16px; }
.ios .activity .event.update { background:#0a84ff; } .ios .activity .event.end { background:#8e8e93; }
.ios .activity .type { font-size:11px; color:#aeaeb2; }
.ios .activity .title { font-weight:600; font-size:14px; } .ios .activity .body { font-size:14px; white-space:pre-wrap; overflow-wrap:anywhere; }
.ios .activity .kv { margin-top:6px; } .ios .activity .kv dt { color:#aeaeb2; } .ios .activity .state dd { font-weight:600; }
.android .card { background:#fff; border-radius:20px; padding:12px 14px; box-shadow:0 1px 6px rgba(0,0,0,.15); display:grid; grid-template-columns:1fr auto; gap:2px 10px; font-family: Roboto, "DejaVu Sans", sans-serif; }
.android .head { grid-column:1 / span 2; display:flex; align-items:center; gap:6px; font-size:12px; color:var(--muted); }
.android .small { width:18px; height:18px; border-radius:50%; background:#5f6368; color:#fff; font-size:10px; display:flex; align-items:center; justify-content:center; }
.android .title { grid-column:1; font-weight:600; font-size:14px; } .android .body { grid-column:1; font-size:14px; color:#3c4043; white-space:pre-wrap; overflow-wrap:anywhere; }
.android .large { grid-column:2; grid-row:2 / span 2; width:40px; height:40px; border-radius:50%; }
.android .picture { grid-column:1 / span 2; width:100%; height:96px; border-radius:10px; margin-top:6px; }
.android .actions { grid-column:1 / span 2; display:flex; gap:16px; margin-top:8px; }
.android .actions button { border:0; background:transparent; color:#1a73e8; font-weight:600; font-size:13px; padding:4px 0; }
.web .window { background:#fff; border:1px solid #c7c7cc; border-radius:8px; box-shadow:0 3px 12px rgba(0,0,0,.18); padding:10px 12px; display:grid; grid-template-columns:44px 1fr; gap:2px 10px; font-family: "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
.web .wicon { grid-row:1 / span 3; width:44px; height:44px; border-radius:4px; }
.web .title { font-weight:600; font-size:14px; } .web .origin { font-size:11px; color:var(--muted); } .web .body { font-size:13px; white-space:pre-wrap; overflow-wrap:anywhere; }
.web .picture { grid-column:1 / span 2; width:100%; height:96px; margin-top:6px; border-radius:4px; }
.web .actions { grid-column:1 / span 2; display:flex; gap:6px; margin-top:8px; }
.web .actions button { flex:1; border:1px solid #c7c7cc; background:#f4f4f6; border-radius:4px; padding:5px; font-size:12px; }
.web.safari .window { border-radius:12px; background:rgba(246,246,248,.98); }
.facts { display:flex; flex-wrap:wrap; gap:4px; margin-top:6px; }
.facts span { font-size:11px; background:#f0f0f3; border-radius:6px; padding:1px 6px; color:#3a3a3c; }
.hidden-buttons { font-size:11px; color:var(--muted); margin-top:4px; }
@media (min-width: 1180px) {
  main { max-width:1560px; }
  .list { display:grid; grid-template-columns:repeat(2, minmax(0, 1fr)); align-items:start; }
  .message { grid-template-columns:minmax(260px, 340px) minmax(0, 1fr); }
}
@media (max-width: 720px) {
  .top { position:static; padding:8px 10px; } main { padding:10px 8px 30px; }
  .message { grid-template-columns:1fr; padding:10px; }
  .filters input, .filters select { max-width:110px; }
}
"""#

    static let javascript = #"""
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const list = $("list"), empty = $("empty"), form = $("filters");
  // /m/N: the permalink of one message (the same page, showing that one alone).
  const single = (/^\/m\/([0-9]{1,18})$/.exec(location.pathname) || [])[1];
  const fields = ["q", "platform", "app", "campaign", "token"];
  const state = { messages: new Map(), images: localStorage.getItem("inbox.images") === "1", tab: new Map(), press: new Map() };

  // DOM helpers: every text goes through textContent, never through HTML parsing.
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent, ...children) { for (const child of children) if (child) parent.appendChild(child); return parent; }
  function isImageURL(url) { return typeof url === "string" && /^(https?:\/\/|data:image\/)/i.test(url); }
  // Remote images load only with "load images" on; otherwise a placeholder names the URL.
  function picture(url, cls, label, small) {
    if (!url) return null;
    if (state.images && isImageURL(url)) {
      const img = el("img", cls + " ph");
      img.alt = label; img.src = url; img.referrerPolicy = "no-referrer";
      return img;
    }
    const box = el("div", cls + " ph", small ? label : label + " " + url);
    box.title = url;
    return box;
  }

  function filters() {
    const data = new FormData(form), out = {};
    for (const name of fields) { const v = (data.get(name) || "").trim(); if (v) out[name] = v; }
    return out;
  }
  // What ?q= searches (the server's InboxMessage.searchableTexts): texts, app, campaign, language, token, msgId, deep link.
  function searchable(m) {
    const f = m.msgIdFields || {}, out = [m.app, m.campaign, m.language, m.token, m.audience, m.msgId, m.url, f.userId, f.subscriptionId];
    for (const d of m.displays || []) out.push(d.title, d.subtitle, d.body, d.titleLocalization, d.bodyLocalization);
    return out.filter((x) => typeof x === "string");
  }
  function matches(m, f) {
    if (f.platform && m.platform !== f.platform) return false;
    if (f.app && m.app !== f.app) return false;
    if (f.campaign && m.campaign !== f.campaign) return false;
    if (f.token && !(m.token || m.audience || "").includes(f.token)) return false;
    if (f.q && !searchable(m).some((t) => t.toLowerCase().includes(f.q.toLowerCase()))) return false;
    return true;
  }

  function time(text) { const d = new Date(text); return isNaN(d) ? text : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }); }
  function when(text) { const d = new Date(text); return isNaN(d) ? text : d.toLocaleString([], { dateStyle: "short", timeStyle: "medium" }); }
  function short(text, n) { return text && text.length > n ? text.slice(0, Math.ceil(n / 2)) + "…" + text.slice(-Math.floor(n / 2) + 1) : text; }

  // The press the SDK hands the app (the SDK's contract, docs/payloads.md): {url, data, actionId, msgId, campaignId}.
  function normalizedPress(m, button) {
    const data = {}; for (const [k, v] of Object.entries(m.data || {})) data[k] = v;
    return { url: button ? (button.url || m.url || null) : (m.url || null), data, actionId: button ? button.id : null, msgId: m.msgId, campaignId: m.campaign };
  }

  async function press(m, button, card) {
    const line = card.querySelector(".press");
    const body = normalizedPress(m, button);
    line.textContent = "";
    add(line, el("b", null, (button ? "clicked " + button.id : "opened") + " "), el("span", "press-status", "…"), el("pre", "mono", "onOpen(" + JSON.stringify(body) + ")"));
    const params = new URLSearchParams({ id: String(m.id) });
    if (button) params.set("action", button.id);
    delete line.dataset.status;
    // The outcome may arrive as a `press` event before this answer does.
    state.press.set(m.id, line);
    try {
      const answer = await fetch("/api/press?" + params.toString(), { method: "POST" });
      const json = await answer.json();
      const status = line.querySelector(".press-status");
      if (!answer.ok) status.textContent = "refused: " + (json.error || answer.status);
      else if (!json.queued) status.textContent = "(no --events-url: nothing posted)";
      else if (line.dataset.status === undefined) status.textContent = "posting " + json.event + "…";
    } catch (error) { line.querySelector(".press-status").textContent = "failed: " + error; }
  }

  function buttonRow(m, display, card, cls) {
    if (!display.buttons.length) return null;
    const row = el("div", "actions " + (cls || ""));
    for (const button of display.buttons) {
      const b = el("button", "button", button.title);
      b.type = "button"; b.dataset.action = button.id;
      b.addEventListener("click", (event) => { event.stopPropagation(); press(m, button, card); });
      row.appendChild(b);
    }
    return row;
  }
  function pressable(node, m, card) {
    node.classList.add("press-target");
    node.tabIndex = 0;
    node.title = "press: posts opened";
    node.addEventListener("click", () => press(m, null, card));
    node.addEventListener("keydown", (e) => { if (e.key === "Enter") press(m, null, card); });
    return node;
  }
  function facts(display, m) {
    const box = el("div", "facts"), items = [];
    if (display.sound) items.push("sound " + display.sound);
    if (display.group) items.push((display.surface === "ios" ? "thread " : display.surface === "android" ? "group " : "tag ") + display.group);
    if (display.groupMessage) items.push("summary “" + display.groupMessage + "”");
    if (display.channel) items.push("channel " + display.channel);
    if (display.category) items.push("category " + display.category);
    if (display.interruptionLevel) items.push(display.interruptionLevel);
    if (display.smallIcon) items.push((display.surface === "android" ? "small icon " : "badge ") + display.smallIcon);
    if (display.accentColor) items.push("accent " + display.accentColor);
    if (display.badge && display.surface !== "ios") items.push("badge " + display.badge);
    for (const item of items) box.appendChild(el("span", null, item));
    return items.length ? box : null;
  }
  function extras(display) {
    const out = [];
    if (display.hiddenButtons.length) out.push(el("div", "hidden-buttons", "not shown here: " + display.hiddenButtons.map((b) => b.title).join(", ")));
    if (display.notes.length) { const ul = el("ul", "notes"); for (const n of display.notes) ul.appendChild(el("li", null, n)); out.push(ul); }
    return out;
  }

  function drawLiveActivity(m, d, card) {
    const la = d.liveActivity;
    const root = el("div", "surface ios");
    root.dataset.surface = d.surface;
    const box = pressable(el("div", "activity"), m, card);
    box.dataset.event = la.event;
    add(box, add(el("div", "head"), el("span", "app", m.app || d.appName || "app"), el("span", "event " + la.event, la.event)));
    if (la.attributesType) box.appendChild(el("div", "type", la.attributesType));
    if (d.title) box.appendChild(el("div", "title", d.title));
    if (d.titleLocalization) box.appendChild(el("div", "title loc", "⟨" + d.titleLocalization + "⟩"));
    if (d.body) box.appendChild(el("div", "body", d.body));
    if (d.bodyLocalization) box.appendChild(el("div", "body loc", "⟨" + d.bodyLocalization + "⟩"));
    const state = kv(la.contentState.map(([k, v]) => [k, v]));
    state.classList.add("state");
    box.appendChild(state);
    box.appendChild(kv([["attributes", la.attributes.map(([k, v]) => k + ": " + v).join(", ")],
      ["updated", la.timestamp && when(la.timestamp)], ["stale after", la.staleDate && when(la.staleDate)],
      ["dismissed at", la.dismissalDate && when(la.dismissalDate)], ["relevance", la.relevanceScore]]));
    add(root, box, facts(d, m), ...extras(d));
    return root;
  }
  function drawIOS(m, d, card) {
    if (d.liveActivity) return drawLiveActivity(m, d, card);
    const root = el("div", "surface ios");
    root.dataset.surface = d.surface;
    if (d.silent) { add(root, el("div", "silent", "not displayed"), ...extras(d)); return root; }
    const banner = pressable(el("div", "banner"), m, card);
    const name = m.app || d.appName || "app";
    const icon = el("div", "icon", name.replace(/^.*\./, "").slice(0, 1).toUpperCase());
    if (d.badge) icon.appendChild(el("span", "badge", d.badge));
    const head = add(el("div", "head"), el("span", "app", name), el("span", null, "now"));
    if (d.appName) head.title = "apns-topic " + d.appName;
    add(banner, icon, head);
    if (d.title) banner.appendChild(el("div", "title", d.title));
    if (d.titleLocalization) banner.appendChild(el("div", "title loc", "⟨" + d.titleLocalization + "⟩"));
    if (d.subtitle) banner.appendChild(el("div", "subtitle", d.subtitle));
    if (d.body) banner.appendChild(el("div", "body", d.body));
    if (d.bodyLocalization) banner.appendChild(el("div", "body loc", "⟨" + d.bodyLocalization + "⟩"));
    const thumb = picture(d.image, "thumb", "image", true);
    if (thumb) banner.appendChild(thumb);
    add(root, banner, buttonRow(m, d, card), facts(d, m), ...extras(d));
    return root;
  }
  function drawAndroid(m, d, card) {
    const root = el("div", "surface android");
    root.dataset.surface = d.surface;
    if (d.silent) { add(root, el("div", "silent", "not displayed (data message)"), ...extras(d)); return root; }
    const box = pressable(el("div", "card"), m, card);
    const small = el("span", "small", (d.smallIcon || "•").slice(0, 1).toUpperCase());
    if (d.accentColor) small.style.background = d.accentColor;
    const head = add(el("div", "head"), small, el("span", null, m.app || "app"));
    if (d.subtitle) head.appendChild(el("span", null, "· " + d.subtitle));
    head.appendChild(el("span", null, "· now"));
    add(box, head, el("div", "title", d.title || ""), el("div", "body", d.body || ""));
    const large = picture(d.icon, "large", "icon", true);
    if (large) box.appendChild(large);
    const big = picture(d.image, "picture", "picture");
    if (big) box.appendChild(big);
    const row = buttonRow(m, d, card);
    if (row && d.accentColor) for (const b of row.children) b.style.color = d.accentColor;
    if (row) box.appendChild(row);
    add(root, box, facts(d, m), ...extras(d));
    return root;
  }
  function drawWeb(m, d, card) {
    const root = el("div", "surface web " + d.surface);
    root.dataset.surface = d.surface;
    const win = pressable(el("div", "window"), m, card);
    add(win, picture(d.icon, "wicon", "icon", true) || el("div", "wicon ph", d.surface === "safari" ? "site icon" : "no icon"),
      el("div", "title", d.title || ""), el("div", "origin", location.hostname), el("div", "body", d.body || ""),
      picture(d.image, "picture", "image"), buttonRow(m, d, card));
    add(root, win, facts(d, m), ...extras(d));
    return root;
  }

  function drawDisplays(m, card) {
    const box = el("div", "displays");
    const displays = m.displays || [];
    if (!displays.length) { box.appendChild(el("div", "silent", m.problem || "nothing to draw")); return box; }
    if (displays.length > 1) {
      const tabs = el("div", "tabs");
      tabs.setAttribute("role", "tablist");
      const chosen = state.tab.get(m.id) || displays[0].surface;
      for (const d of displays) {
        const t = el("button", null, d.label);
        t.type = "button"; t.dataset.surface = d.surface; t.setAttribute("role", "tab");
        t.setAttribute("aria-selected", String(d.surface === chosen));
        t.addEventListener("click", () => { state.tab.set(m.id, d.surface); redraw(m.id); });
        tabs.appendChild(t);
      }
      box.appendChild(tabs);
    }
    const chosen = state.tab.get(m.id) || displays[0].surface;
    const d = displays.find((x) => x.surface === chosen) || displays[0];
    // By surface: a Huawei message is drawn as its Android notification.
    const draw = d.surface === "ios" ? drawIOS : d.surface === "android" ? drawAndroid : drawWeb;
    box.appendChild(draw(m, d, card));
    return box;
  }

  function kv(pairs) {
    const dl = el("dl", "kv");
    for (const [k, v, cls] of pairs) if (v !== undefined && v !== null && v !== "") add(dl, el("dt", null, k), el("dd", cls || null, v));
    return dl;
  }
  function drawMeta(m) {
    const meta = el("div", "meta");
    const link = el("a", "permalink", "#" + m.id);
    link.href = "/m/" + encodeURIComponent(String(m.id)); link.title = "this notification alone (permalink)";
    const h = add(el("h3"), el("span", "tag " + m.platform, m.platform), el("span", null, time(m.receivedAt)), link);
    const f = m.msgIdFields;
    if (m.msgId) h.appendChild(el("span", "tag msgid " + (!f ? "invalid" : f.valid === true ? "valid" : f.valid === false ? "invalid" : "unverified"),
      !f ? "msgId unreadable" : f.valid === true ? "msgId verified" : f.valid === false ? "msgId invalid" : "msgId unverified"));
    const remove = el("button", "delete", "Delete");
    remove.type = "button"; remove.title = "delete this notification from the inbox";
    remove.addEventListener("click", () => deleteOne(m.id));
    h.appendChild(remove);
    meta.appendChild(h);
    meta.appendChild(kv([
      ["app", m.app], ["campaign", m.campaign], ["language", m.language, "lang"], ["variant", f && f.variant],
      ["user", f && f.userId], ["subscription", f && f.subscriptionId], ["token", short(m.token, 40), "mono"], ["audience", m.audience, "mono"],
      ["deep link", m.url, "mono"],
      ["data", Object.keys(m.data || {}).map((k) => k + "=" + m.data[k]).join("  "), "mono data"],
    ]));
    if (m.problem) meta.appendChild(el("p", "notes", m.problem));
    const raw = el("details", "raw");
    raw.appendChild(el("summary", null, "raw request"));
    let body = m.request.body;
    try { body = JSON.stringify(JSON.parse(body), null, 2); } catch (_) { /* shown as received */ }
    const head = m.request.method + " " + m.request.path + "\n" + m.request.headers.map(([k, v]) => k + ": " + v).join("\n");
    const note = m.request.encryptedBytes ? "\n\n(decrypted; " + m.request.encryptedBytes + " bytes encrypted, aes128gcm)" : "";
    raw.appendChild(el("pre", "mono", head + "\n\n" + body + note));
    if (f) raw.appendChild(el("pre", "mono", "msgId " + JSON.stringify(f, null, 1)));
    meta.appendChild(raw);
    return meta;
  }

  function card(m) {
    const li = el("li", "message");
    li.dataset.id = String(m.id); li.dataset.platform = m.platform;
    const meta = drawMeta(m);
    li.appendChild(drawDisplays(m, li));
    li.appendChild(meta);
    // A press in progress keeps its line when the list is drawn again.
    li.appendChild(state.press.get(m.id) || el("div", "press"));
    return li;
  }
  function redraw(id) {
    const m = state.messages.get(id), old = list.querySelector('li[data-id="' + id + '"]');
    if (!m || !old) return;
    const press = old.querySelector(".press");
    const fresh = card(m);
    if (fresh.querySelector(".press") !== press) fresh.querySelector(".press").replaceWith(press);
    old.replaceWith(fresh);
  }

  function render(items) {
    list.textContent = "";
    for (const m of items) list.appendChild(card(m));
    updateEmpty();
  }
  function updateEmpty() {
    const any = list.children.length > 0;
    if (single) { $("gone").hidden = any; empty.hidden = true; return; }
    empty.hidden = any;
    $("empty-filtered").hidden = any || Object.keys(filters()).length === 0;
  }
  // Every open page hears of it through the `deleted` event (this one too).
  async function deleteOne(id) {
    const answer = await fetch("/api/messages/" + encodeURIComponent(String(id)), { method: "DELETE" });
    if (answer.ok || answer.status === 404) removeCard(id);
  }
  function removeCard(id) {
    state.messages.delete(id); state.press.delete(id);
    const node = list.querySelector('li[data-id="' + Number(id) + '"]');
    if (node) node.remove();
    updateEmpty();
  }
  function summary(info) {
    const parts = [info.kept + " kept (last " + info.capacity + ")", info.accepted + " accepted"];
    if (info.forgotten) parts.push(info.forgotten + " forgotten");
    if (info.tracking) parts.push("events → " + info.tracking.url + (info.tracking.reportDelivered ? " (delivered reported)" : "") + ": " + info.tracking.posted + " posted, " + info.tracking.failed + " failed");
    else parts.push("no --events-url");
    parts.push(info.msgIdKeys ? "msgIds verified" : "msgIds not verified (no keys)");
    $("summary").textContent = parts.join(" · ");
    if (info.sandbox) $("empty-sandbox").textContent = "This sandbox: " + info.sandbox;
    for (const [id, values] of [["apps", info.apps], ["campaigns", info.campaigns]]) {
      const dl = $(id); dl.textContent = "";
      for (const v of values || []) { const o = document.createElement("option"); o.value = v; dl.appendChild(o); }
    }
  }

  let loading = 0;
  async function loadSingle() {
    const ticket = ++loading;
    const answer = await fetch("/api/messages/" + single);
    const m = answer.ok ? await answer.json() : null;
    if (ticket !== loading) return;
    state.messages.clear();
    if (m) state.messages.set(m.id, m);
    render(m ? [m] : []);
    $("single-title").textContent = m ? "#" + m.id + " · " + m.platform + (m.campaign ? " · " + m.campaign : "") : "#" + single;
    try { summary(await (await fetch("/api/messages?limit=0")).json()); } catch (_) {}
    document.body.dataset.loaded = String(ticket);
  }
  async function load() {
    if (single) return loadSingle();
    const f = filters(), ticket = ++loading;
    const params = new URLSearchParams(f); params.set("limit", "200");
    const url = "/?" + new URLSearchParams(f).toString();
    history.replaceState(null, "", url === "/?" ? "/" : url);
    const answer = await fetch("/api/messages?" + params.toString());
    const info = await answer.json();
    if (ticket !== loading) return;
    state.messages.clear();
    for (const m of info.messages) state.messages.set(m.id, m);
    render(info.messages);
    summary(info);
    document.body.dataset.loaded = String(ticket);
  }
  let refresh = null;
  function refreshSummary() {
    clearTimeout(refresh);
    refresh = setTimeout(async () => { try { summary(await (await fetch("/api/messages?limit=0")).json()); } catch (_) {} }, 300);
  }

  function live() {
    const source = new EventSource("/api/events");
    // Closed when the page goes away: a browser allows a few connections per host, and a
    // page kept for "back" must not hold one.
    window.addEventListener("pagehide", () => source.close());
    const badge = $("live");
    source.onopen = () => { badge.textContent = "live"; badge.className = "live on"; load(); };
    source.onerror = () => { badge.textContent = "reconnecting"; badge.className = "live off"; };
    source.addEventListener("message", (event) => {
      const m = JSON.parse(event.data);
      if (single || state.messages.has(m.id)) { refreshSummary(); return; }
      state.messages.set(m.id, m);
      if (matches(m, filters())) {
        const node = card(m);
        node.classList.add("fresh");
        list.insertBefore(node, list.firstChild);
        while (list.children.length > 500) list.removeChild(list.lastChild);
        updateEmpty();
      }
      refreshSummary();
    });
    source.addEventListener("cleared", () => { state.messages.clear(); render([]); refreshSummary(); });
    source.addEventListener("deleted", (event) => { removeCard(JSON.parse(event.data).id); refreshSummary(); });
    source.addEventListener("press", (event) => {
      const p = JSON.parse(event.data), line = state.press.get(p.id);
      if (line) {
        const status = line.querySelector(".press-status");
        if (status) status.textContent = "→ " + (p.status !== null ? "HTTP " + p.status : "failed: " + (p.error || "?"));
        line.dataset.status = String(p.status);
      }
      refreshSummary();
    });
  }

  // Filters from the URL (deep-linkable), then live.
  const initial = new URLSearchParams(location.search);
  for (const name of fields) if (initial.get(name)) form.elements[name].value = initial.get(name);
  if (single) { form.hidden = true; $("single").hidden = false; document.title = "#" + single + " · pushworker sandbox inbox"; }
  $("f-images").checked = state.images;
  $("f-images").addEventListener("change", (e) => { state.images = e.target.checked; localStorage.setItem("inbox.images", state.images ? "1" : "0"); for (const id of state.messages.keys()) redraw(id); });
  let typing = null;
  form.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(load, 200); });
  form.addEventListener("submit", (e) => { e.preventDefault(); load(); });
  $("clear").addEventListener("click", async () => { await fetch("/api/messages", { method: "DELETE" }); });
  load();
  live();
})();
"""#
}

"""The conversation page's own style and script: GitHub's layout around the comments
(GitHub's markdown CSS styles the comments themselves), mermaid drawing, and polling."""

from __future__ import annotations

from typing import Final

PAGE_STYLE: Final = """
body{margin:0;background:#fff;color:#1f2328;font:14px/1.5 -apple-system,BlinkMacSystemFont,
"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif,"Apple Color Emoji","Segoe UI Emoji"}
.frame{max-width:1280px;margin:0 auto;padding:24px 32px}
.pr-header{border-bottom:1px solid #d1d9e0;padding-bottom:8px;margin-bottom:16px}
.pr-header h1{font-size:32px;font-weight:400;margin:0 0 8px}
.pr-header .number{color:#59636e;font-weight:300}
.pr-header code{background:#ddf4ff;color:#0969da;border-radius:6px;padding:0 5px;
font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.state{display:inline-block;border-radius:2em;padding:5px 12px;color:#fff;font-weight:500;
margin-right:6px}
.state-open{background:#1f883d}.state-closed{background:#cf222e}
.layout{display:flex;gap:24px;align-items:flex-start}
.timeline{flex:1;min-width:0}
.sidebar{width:296px;font-size:12px;border-left:1px solid #d1d9e0;padding-left:16px}
.sidebar h2{font-size:12px;color:#59636e;margin:0}
.sidebar ul{list-style:none;padding:0;margin:8px 0}.sidebar li{margin-bottom:6px}
.muted{color:#59636e;font-weight:400}
.comment{display:flex;gap:16px;margin-bottom:16px;position:relative}
.avatar{flex:none;width:40px;height:40px;border-radius:50%;background:#eaeef2;color:#59636e;
display:flex;align-items:center;justify-content:center;font-weight:600;font-size:18px}
.by-bot .avatar{border-radius:6px;background:#0969da;color:#fff}
.box{flex:1;min-width:0;border:1px solid #d1d9e0;border-radius:6px;background:#fff}
.box-header{background:#f6f8fa;border-bottom:1px solid #d1d9e0;padding:8px 16px;
border-radius:6px 6px 0 0;color:#59636e}
.by-bot .box-header{background:#ddf4ff;border-bottom-color:#b6e3ff}
.author{color:#1f2328}
.badge{border:1px solid #d1d9e0;border-radius:2em;padding:0 7px;margin:0 4px;font-size:12px}
.box .markdown-body{padding:16px;font-size:14px}
.reactions{padding:0 16px 12px}
.reaction{display:inline-block;border:1px solid #d1d9e0;border-radius:2em;padding:0 8px;
margin-right:4px;line-height:26px;font-size:12px;background:#f6f8fa}
.checks{border:1px solid #d1d9e0;border-radius:6px;margin:24px 0 0 56px}
.checks-header{padding:12px 16px;font-weight:600;font-size:16px;border-bottom:1px solid #d1d9e0}
.checks-header.bad{color:#1f2328}.checks-header.ok{color:#1f2328}
.check{padding:8px 16px;border-bottom:1px solid #d1d9e0}.check:last-child{border-bottom:0}
.check details summary{cursor:pointer;color:#0969da;font-size:12px;margin-top:4px}
.check .markdown-body{padding:8px 0 0;font-size:13px}
.mark{font-weight:700}.mark.ok{color:#1a7f37}.mark.bad{color:#d1242f}.mark.meh{color:#59636e}
.conclusion{text-transform:capitalize;color:#59636e}
.empty{color:#59636e}
"""

# Mermaid draws a chart only where it is shown, as GitHub does (a chart in a closed section
# would be measured at zero size); ``#open`` opens every section first. The page then asks
# for the conversation every second and swaps it in when its version changed, keeping the
# sections a reader opened, until the scene has been played.
PAGE_SCRIPT: Final = """
mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
const frame = () => document.querySelector("#conversation > .frame");
const draw = async (root) => {
  for (const code of root.querySelectorAll("pre > code.language-mermaid")) {
    const details = code.closest("details");
    if (details && !details.open) continue;
    const chart = document.createElement("div");
    chart.className = "mermaid";
    chart.textContent = code.textContent;
    code.parentElement.replaceWith(chart);
  }
  const pending = [...root.querySelectorAll("div.mermaid:not([data-processed])")];
  if (!pending.length) return;
  // Mermaid lays a chart out by measuring its text on screen: in a column narrower than
  // the chart, the svg is scaled down while it measures, every label seems smaller than it
  // is, and the last x-axis label is cut off. Each chart is drawn at its own width, then
  // left to fit the column.
  for (const chart of pending) {
    const width = /^\\s*width:\\s*(\\d+)/m.exec(chart.textContent);
    chart.style.width = `${width ? width[1] : 900}px`;
  }
  try { await mermaid.run({nodes: pending}); } catch (e) { console.error(e); }
  for (const chart of pending) chart.style.width = "";
};
const prepare = async (opened) => {
  const root = frame();
  const all = [...root.querySelectorAll("details")];
  all.forEach((d, i) => {
    if (location.hash === "#open" || opened.has(i)) d.open = true;
    d.addEventListener("toggle", () => draw(d));
  });
  await draw(root);
  document.body.dataset.drawn = root.dataset.version;
};
let busy = false;
let timer = null;
const poll = async () => {
  if (busy) return;
  busy = true;
  try {
    const answer = await fetch("/conversation", {cache: "no-store"});
    const parsed = new DOMParser().parseFromString(await answer.text(), "text/html");
    const next = parsed.querySelector(".frame");
    if (next && next.dataset.version !== frame().dataset.version) {
      const opened = new Set();
      frame().querySelectorAll("details").forEach((d, i) => { if (d.open) opened.add(i); });
      document.getElementById("conversation").replaceChildren(document.adoptNode(next));
      await prepare(opened);
    }
    if (frame().dataset.finished === "yes") clearInterval(timer);
  } catch (e) {
    console.error(e);
  } finally {
    busy = false;
  }
};
prepare(new Set()).then(() => {
  if (frame().dataset.finished !== "yes") timer = setInterval(poll, 1000);
});
"""

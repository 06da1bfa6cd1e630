/** The dashboard page's stylesheet, inlined into the page (no external file, no CDN). */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1d232a; --muted: #5b6673; --bg: #fbfcfd; --panel: #fff; --line: #d9dee4; --accent: #2563eb; --bad: #b42318; --bad-bg: #fde8e6; --ok: #067647; --warn: #9a6700; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ee; --muted: #9aa5b1; --bg: #111418; --panel: #181c21; --line: #2c333b; --accent: #7aa2ff; --bad: #ff8a80; --bad-bg: #3a1d1b; --ok: #6fd3a0; --warn: #e3b341; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; align-items: baseline; padding: .9rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel); }
header h1 { font-size: 1.15rem; margin: 0; }
header p { margin: 0; color: var(--muted); }
#status { margin-left: auto; }
#status.live::before { content: "●"; color: var(--ok); margin-right: .35rem; }
#status.down::before { content: "●"; color: var(--bad); margin-right: .35rem; }
main { padding: 1rem 1.25rem 2rem; display: grid; gap: 1.5rem; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: .9rem 1rem; overflow-x: auto; }
h2 { font-size: 1rem; margin: 0 0 .6rem; }
.summary { color: var(--muted); font-weight: normal; margin-left: .5rem; }
.tools { display: flex; gap: .5rem; align-items: center; margin-bottom: .6rem; }
input, button { font: inherit; }
input { padding: .3rem .45rem; border: 1px solid var(--line); border-radius: 5px; background: var(--bg); color: var(--fg); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; white-space: nowrap; }
thead th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody th { font-weight: 600; white-space: normal; min-width: 10rem; overflow-wrap: anywhere; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
.badge { display: inline-block; font-size: .75rem; padding: 0 .4rem; border-radius: 999px; border: 1px solid var(--line); margin-left: .3rem; }
.badge.alive { color: var(--ok); border-color: currentColor; }
.badge.dead { color: var(--bad); border-color: currentColor; font-weight: 600; }
.badge.unknown { color: var(--muted); }
tr.dead { background: var(--bad-bg); }
.reaper { white-space: normal; color: var(--bad); font-size: .8rem; font-weight: normal; max-width: 22rem; margin-top: .2rem; }
.waiting { color: var(--warn); font-weight: 600; }
.free { color: var(--muted); }
button { cursor: pointer; border-radius: 5px; border: 1px solid var(--line); background: var(--panel); color: var(--fg); padding: .25rem .65rem; }
button.danger { border-color: var(--bad); color: var(--bad); }
button.danger.primary { background: var(--bad); color: #fff; }
button:disabled { opacity: .45; cursor: not-allowed; }
button:focus-visible, input:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: .9rem; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .6rem; }
figcaption { font-weight: 600; margin-bottom: .2rem; overflow-wrap: anywhere; }
.chart-row { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; }
.chart-title { font-size: .78rem; color: var(--muted); }
svg .bar { fill: var(--accent); }
svg .bar.wait { fill: var(--warn); }
svg .axis { stroke: var(--line); }
svg text { fill: var(--muted); font-size: 9px; }
.muted { color: var(--muted); }
dialog { border: 1px solid var(--line); border-radius: 8px; padding: 1.1rem 1.2rem; max-width: 30rem; background: var(--panel); color: var(--fg); }
dialog::backdrop { background: rgb(0 0 0 / .35); }
dialog label { display: block; margin: .7rem 0 .2rem; font-weight: 600; }
dialog input { width: 100%; }
dialog .actions { display: flex; gap: .5rem; justify-content: flex-end; margin-top: 1rem; }
#release-error { color: var(--bad); min-height: 1.2em; margin: .5rem 0 0; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

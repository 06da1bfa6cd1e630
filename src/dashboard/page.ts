/**
 * The dashboard's one page: HTML with its stylesheet and script inline (each with the response's
 * CSP nonce), so that it works without network access beyond the dashboard itself. The script
 * (./page-script.ts) fills it from the live feed.
 */
import { PAGE_SCRIPT } from './page-script.js';
import { PAGE_STYLE } from './page-style.js';

/** The page, with `nonce` on its inline style and script. */
/**
 * The page's icon, inline (a padlock): without one the browser asks for /favicon.ico, which is not
 * the dashboard's to answer (mounted under a basePath, it is the application's) and logs a 404 in
 * the console. The CSP allows `img-src data:`.
 */
const ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Cpath d='M5 7V5a3 3 0 0 1 6 0v2' fill='none' stroke='%23445' stroke-width='1.6'/%3E%3Crect x='3' y='7' width='10' height='8' rx='1.5' fill='%23445'/%3E%3C/svg%3E";

export function pageHtml(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>padlock dashboard</title>
<link rel="icon" href="${ICON}">
<style nonce="${nonce}">${PAGE_STYLE}</style>
</head>
<body>
<header>
  <h1>padlock dashboard</h1>
  <p id="store">connecting…</p>
  <p id="status" role="status" aria-live="polite">Connecting…</p>
</header>
<main>
  <section aria-labelledby="locks-title">
    <h2 id="locks-title">Locks in use<span id="locks-summary" class="summary"></span></h2>
    <div class="tools">
      <label for="filter">Filter by name</label>
      <input id="filter" type="search" autocomplete="off" spellcheck="false">
    </div>
    <table id="locks" aria-labelledby="locks-title">
      <thead><tr id="locks-head"></tr></thead>
      <tbody></tbody>
    </table>
    <p id="locks-empty" class="muted" hidden>No lock is held or waited for.</p>
  </section>
  <section aria-labelledby="timings-title">
    <h2 id="timings-title">Hold and wait times</h2>
    <div id="timings" class="charts"></div>
    <p id="timings-empty" class="muted" hidden>Nothing recorded: Padlocks record these with <code>recordTimings: true</code>.</p>
  </section>
  <section aria-labelledby="audit-title">
    <h2 id="audit-title">Force-releases</h2>
    <table id="audit" aria-labelledby="audit-title">
      <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Lock</th><th scope="col" class="num">Fence</th><th scope="col">Why</th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="audit-empty" class="muted" hidden>None recorded.</p>
  </section>
</main>
<dialog id="release-dialog" aria-labelledby="release-title" aria-describedby="release-desc">
  <form id="release-form" method="dialog">
    <h2 id="release-title">Force release</h2>
    <p id="release-desc">Frees <strong id="release-name"></strong> whoever holds it and gives its turn to the queue. Its holder is told at once, within a second (its <code>lease.signal</code> aborts with <code>LockLostError</code>), but code past its last check may still write: free only a holder that is gone or stuck. Type the lock's name to confirm.</p>
    <label for="release-confirm">Lock name</label>
    <input id="release-confirm" autocomplete="off" spellcheck="false" required>
    <label for="release-why">Reason, for the audit log</label>
    <input id="release-why" autocomplete="off" maxlength="500">
    <p id="release-error" role="alert"></p>
    <div class="actions">
      <button type="button" id="release-cancel">Cancel</button>
      <button type="submit" id="release-submit" class="danger primary" disabled>Release</button>
    </div>
  </form>
</dialog>
<script nonce="${nonce}">${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

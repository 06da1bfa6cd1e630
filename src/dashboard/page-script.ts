/**
 * The dashboard page's script, inlined into the page: listens to the live feed (server-sent
 * events), draws the locks table, the distributions (inline SVG bar charts drawn here, no library)
 * and the audit log, and runs the force-release dialog. Plain browser JavaScript, no build step.
 */
import { TIMING_BUCKETS_MS } from '../timings.js';

const SCRIPT = String.raw`
'use strict';
(function () {
  var BUCKETS = __BUCKETS__;
  var base = new URL('.', location.href);
  var latest = null;
  var releasing = null;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === 'text') node.textContent = attrs[k];
      else if (k === 'className') node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c != null) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }
  function ms(value) {
    if (value == null) return '—';
    if (value < 1000) return Math.round(value) + ' ms';
    if (value < 60000) return String(Number((value / 1000).toFixed(value < 10000 ? 1 : 0))) + ' s';
    if (value < 3600000) return Math.floor(value / 60000) + ' min' + (Math.round((value % 60000) / 1000) > 0 ? ' ' + Math.round((value % 60000) / 1000) + ' s' : '');
    return Math.floor(value / 3600000) + ' h' + (Math.round((value % 3600000) / 60000) > 0 ? ' ' + Math.round((value % 3600000) / 60000) + ' min' : '');
  }
  function bucketLabel(i) {
    return i < BUCKETS.length ? '≤ ' + ms(BUCKETS[i]) : '> ' + ms(BUCKETS[BUCKETS.length - 1]);
  }

  function setStatus(text, live) {
    var s = $('status');
    s.textContent = text;
    s.className = live ? 'live' : 'down';
  }

  function holderCell(lock) {
    var td = el('td');
    if (!lock.held) { td.appendChild(el('span', { className: 'free', text: 'free' })); return td; }
    lock.holders.forEach(function (h, i) {
      if (i > 0) td.appendChild(el('br'));
      var text = (h.side ? h.side + ' ' : '') + h.owner + (h.holdCount > 1 ? ' ×' + h.holdCount : '') + (h.permits != null ? ' (' + h.permits + (h.permits === 1 ? ' permit)' : ' permits)') : '');
      td.appendChild(el('code', { text: text }));
      td.appendChild(el('span', { className: 'badge ' + h.liveness, text: h.liveness === 'alive' ? 'client alive' : h.liveness === 'dead' ? 'client dead' : 'liveness unknown' }));
    });
    return td;
  }

  function renderLocks(snap) {
    var filter = $('filter').value.trim().toLowerCase();
    var head = $('locks-head');
    var columns = ['Lock', 'Kind', 'Holder', 'Fence', 'Lease left', 'Held for', 'Waiting', 'Oldest wait'];
    if (snap.allowRelease) columns.push('Actions');
    if (head.childElementCount !== columns.length) {
      head.replaceChildren.apply(head, columns.map(function (c) { return el('th', { scope: 'col', className: /Fence|Lease|Held for|Waiting|Oldest/.test(c) ? 'num' : '', text: c }); }));
    }
    var shown = snap.locks.filter(function (l) { return filter === '' || l.name.toLowerCase().indexOf(filter) >= 0; });
    // Rows (and their Force release buttons) are kept from one snapshot to the next and updated in
    // place: replaced at every refresh, a button lost the keyboard focus each time, and a click whose
    // press and release straddled a refresh was lost (seen in a test clicking it under load).
    var body = $('locks').tBodies[0];
    var kept = {};
    Array.prototype.forEach.call(body.rows, function (tr) { kept[tr.getAttribute('data-kind') + '\u0000' + tr.getAttribute('data-lock')] = tr; });
    var rows = shown.map(function (lock, i) {
      var id = 'lock-' + i;
      var tr = kept[lock.kind + '\u0000' + lock.name] || el('tr', { 'data-lock': lock.name, 'data-kind': lock.kind });
      tr.className = lock.dead ? 'dead' : '';
      var nameCell = el('th', { scope: 'row', id: id }, [lock.name]);
      if (lock.dead) {
        nameCell.appendChild(el('span', { className: 'badge dead', text: 'dead holder' }));
        nameCell.appendChild(el('div', { className: 'reaper', text: 'Its lease runs but every client holding it is gone: ' + lock.dead.reaper + '.' }));
      }
      var cells = [
        nameCell,
        el('td', { text: lock.kindLabel }),
        holderCell(lock),
        el('td', { className: 'num fence', text: lock.fence == null ? '—' : String(lock.fence) }),
        el('td', { className: 'num', text: lock.held ? ms(lock.leaseMs) : '—' }),
        el('td', { className: 'num', text: lock.heldForMs == null ? '—' : (lock.heldSinceStart ? '≥ ' : '') + ms(lock.heldForMs) }),
        el('td', { className: 'num' + (lock.waiting > 0 ? ' waiting' : ''), text: String(lock.waiting) }),
        el('td', { className: 'num', text: ms(lock.oldestWaitMs) }),
      ];
      var actions = tr.cells[cells.length] || null;
      cells.forEach(function (cell, c) {
        var old = tr.cells[c];
        if (old) tr.replaceChild(cell, old); else tr.insertBefore(cell, actions);
      });
      if (snap.allowRelease) {
        if (actions === null) actions = tr.appendChild(el('td'));
        var button = actions.querySelector('button');
        if (lock.held) {
          if (button === null) {
            button = actions.appendChild(el('button', { type: 'button', className: 'danger', text: 'Force release' }));
            button.addEventListener('click', function () { openRelease(this.padlockLock, this); });
          }
          button.padlockLock = lock;
          button.setAttribute('aria-describedby', id);
        } else if (button !== null) {
          actions.removeChild(button);
        }
      } else if (actions !== null) {
        tr.removeChild(actions);
      }
      return tr;
    });
    // In order, moving only the rows that are out of place (a moved row loses the focus inside it).
    rows.forEach(function (tr, i) {
      var at = body.rows[i] || null;
      if (at !== tr) body.insertBefore(tr, at);
    });
    while (body.rows.length > rows.length) body.deleteRow(rows.length);
    $('locks-empty').hidden = rows.length > 0;
    var held = snap.locks.filter(function (l) { return l.held; }).length;
    var waiting = snap.locks.reduce(function (n, l) { return n + l.waiting; }, 0);
    var dead = snap.locks.filter(function (l) { return l.dead; }).length;
    $('locks-summary').textContent = ' · ' + held + ' held, ' + waiting + ' waiting' + (dead > 0 ? ', ' + dead + ' with a dead holder' : '') +
      (snap.totalLocks > snap.locks.length ? ' (the first ' + snap.locks.length + ' of ' + snap.totalLocks + ' shown)' : '');
  }

  function chart(dist, metric, name) {
    var width = 300, height = 96, left = 4, bottom = 16, top = 6;
    var n = dist.buckets.length, slot = (width - left * 2) / n, max = Math.max.apply(null, dist.buckets.concat([1]));
    var mean = dist.count > 0 ? dist.sumMs / dist.count : null;
    var label = (metric === 'hold' ? 'Hold times of ' : 'Wait times of ') + name + ': ' + dist.count + (metric === 'hold' ? ' holds' : ' acquisitions') +
      (mean == null ? '' : ', mean ' + ms(mean)) + '; ' + dist.buckets.map(function (c, i) { return c > 0 ? bucketLabel(i) + ': ' + c : null; }).filter(Boolean).join(', ');
    var root = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, width: '100%', role: 'img', 'aria-label': label });
    root.appendChild(svg('line', { x1: left, x2: width - left, y1: height - bottom, y2: height - bottom, 'class': 'axis' }));
    dist.buckets.forEach(function (count, i) {
      var h = count === 0 ? 0 : Math.max(2, (height - bottom - top) * count / max);
      var bar = svg('rect', { x: (left + i * slot + 1).toFixed(1), y: (height - bottom - h).toFixed(1), width: (slot - 2).toFixed(1), height: h.toFixed(1), 'class': 'bar ' + metric });
      var title = svg('title', {});
      title.textContent = bucketLabel(i) + ': ' + count;
      bar.appendChild(title);
      root.appendChild(bar);
    });
    // Each label names the bar its tick marks (its upper bound). "> 5 min", ending at the right
    // edge, is wider than its bar: the 30 s bar gets a label and tick of its own, so that a bar near
    // the end is not read as "> 5 min".
    [0, 6, 9, 13, n - 1].forEach(function (i) {
      var centre = left + i * slot + slot / 2;
      root.appendChild(svg('line', { x1: centre.toFixed(1), x2: centre.toFixed(1), y1: height - bottom, y2: height - bottom + 3, 'class': 'axis' }));
      var t = svg('text', { x: (i === 0 ? left + 1 : i === n - 1 ? width - left : centre).toFixed(1), y: height - 4, 'text-anchor': i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle' });
      t.textContent = i < BUCKETS.length ? ms(BUCKETS[i]) : '> ' + ms(BUCKETS[BUCKETS.length - 1]);
      root.appendChild(t);
    });
    var box = el('div');
    box.appendChild(el('div', { className: 'chart-title', text: (metric === 'hold' ? 'Hold time' : 'Wait time') + ' · ' + dist.count + (mean == null ? '' : ' · mean ' + ms(mean)) }));
    box.appendChild(root);
    return box;
  }

  function renderTimings(snap) {
    var figures = snap.timings.map(function (t) {
      var fig = el('figure');
      fig.appendChild(el('figcaption', { text: t.name }));
      fig.appendChild(el('div', { className: 'chart-row' }, [chart(t.hold, 'hold', t.name), chart(t.wait, 'wait', t.name)]));
      return fig;
    });
    var box = $('timings');
    box.replaceChildren.apply(box, figures);
    $('timings-empty').hidden = figures.length > 0;
  }

  function renderAudit(snap) {
    var rows = snap.audit.map(function (a) {
      return el('tr', {}, [
        el('td', { text: new Date(a.at).toLocaleString() }),
        el('td', { text: a.who }),
        el('td', { text: a.name + (a.kind === 'mutex' ? '' : ' (' + a.kind + ')') + (a.released ? '' : ' — was already free') }),
        el('td', { className: 'num', text: a.fence == null ? '—' : String(a.fence) }),
        el('td', { text: a.why || '—' }),
      ]);
    });
    var body = $('audit').tBodies[0];
    body.replaceChildren.apply(body, rows);
    $('audit-empty').hidden = rows.length > 0;
  }

  function render(snap) {
    latest = snap;
    $('store').textContent = snap.store;
    renderLocks(snap);
    renderTimings(snap);
    renderAudit(snap);
    setStatus('Live · read ' + new Date(snap.at).toLocaleTimeString() + ' in ' + snap.readMs + ' ms', true);
  }

  function openRelease(lock, opener) {
    releasing = { name: lock.name, kind: lock.kind, opener: opener };
    $('release-name').textContent = lock.name + (lock.kind === 'mutex' ? '' : ' (' + lock.kind + ')');
    $('release-title').textContent = 'Force release ' + lock.name;
    $('release-confirm').value = '';
    $('release-why').value = '';
    $('release-error').textContent = '';
    $('release-submit').disabled = true;
    $('release-dialog').showModal();
    $('release-confirm').focus();
  }
  function closeRelease() {
    $('release-dialog').close();
  }
  $('release-confirm').addEventListener('input', function () {
    $('release-submit').disabled = releasing === null || $('release-confirm').value !== releasing.name;
  });
  $('release-cancel').addEventListener('click', closeRelease);
  $('release-dialog').addEventListener('close', function () {
    var opener = releasing && releasing.opener;
    releasing = null;
    if (opener && document.body.contains(opener)) opener.focus();
  });
  $('release-form').addEventListener('submit', function (event) {
    event.preventDefault();
    if (releasing === null || $('release-confirm').value !== releasing.name) return;
    var request = { name: releasing.name, kind: releasing.kind, confirm: $('release-confirm').value, why: $('release-why').value };
    $('release-submit').disabled = true;
    fetch(new URL('release', base), { method: 'POST', headers: { 'content-type': 'application/json', 'x-padlock-dashboard': '1' }, body: JSON.stringify(request) })
      .then(function (res) { return res.json().then(function (body) { return { ok: res.ok, body: body }; }); })
      .then(function (r) {
        if (!r.ok) throw new Error(r.body && r.body.error ? r.body.error : 'the release failed');
        closeRelease();
        setStatus(r.body.released ? 'Released ' + r.body.name + ' (fence ' + r.body.fence + ')' : r.body.name + ' was already free', true);
      })
      .catch(function (error) {
        $('release-error').textContent = error.message;
        $('release-submit').disabled = false;
      });
  });
  $('filter').addEventListener('input', function () { if (latest) renderLocks(latest); });

  var events = new EventSource(new URL('events', base));
  events.addEventListener('snapshot', function (event) { render(JSON.parse(event.data)); });
  events.addEventListener('problem', function (event) {
    var p = JSON.parse(event.data);
    setStatus('Cannot read the store: ' + p.message + ' (retrying)', false);
  });
  events.addEventListener('error', function () { setStatus('Disconnected from the dashboard, reconnecting…', false); });
})();
`;

/** The script, with the histogram's bucket bounds filled in. */
export const PAGE_SCRIPT = SCRIPT.replace('__BUCKETS__', JSON.stringify(TIMING_BUCKETS_MS));

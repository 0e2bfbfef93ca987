// The live ring page of a Ringmaster demo peer. Plain JavaScript, no build step, no CDN.
// Polls GET /ring every second (redraws the ring only when the view or checksum changed),
// follows GET /events (Server-Sent Events) for the log, and puts/gets keys through /kv/{key}.
'use strict';

const TWO_63 = 1n << 63n;
const TWO_64 = 2 ** 64;
const state = { ring: null, drawnFor: '', colours: new Map(), highlight: null, kvRequest: 0, clicked: null };

// ---- positions on the circle -------------------------------------------------------------

/** A signed 64-bit ring position (decimal string or BigInt) as a fraction of the circle in [0, 1). */
function fraction(position) {
  return Number(BigInt(position) + TWO_63) / TWO_64;
}

/** The point at a fraction of the circle: Long.MIN_VALUE at 12 o'clock, clockwise. */
function point(f, r) {
  const a = f * 2 * Math.PI;
  return [r * Math.sin(a), -r * Math.cos(a)];
}

/**
 * The size of the range (start, end] as a fraction of the circle, in (0, 1]; start == end is the
 * whole circle. Subtracted as 64-bit integers: two positions a double cannot tell apart still give
 * their true (tiny) span, not 0 or the whole circle.
 */
function spanOf(start, end) {
  const size = BigInt.asUintN(64, BigInt(end) - BigInt(start));
  return size === 0n ? 1 : Number(size) / TWO_64;
}

/** SVG path data for the range (start, end] on a circle of radius r; start == end is the whole circle. */
function arcPath(start, end, r) {
  const fs = fraction(start);
  const span = spanOf(start, end);
  if (span >= 0.999999) {
    return `M 0 ${-r} A ${r} ${r} 0 1 1 0 ${r} A ${r} ${r} 0 1 1 0 ${-r}`;
  }
  const [x0, y0] = point(fs, r);
  const [x1, y1] = point(fs + span, r);
  if (span < 0.002) {
    // A sliver (under 0.7 degrees) is drawn as a straight segment: the same pixels, and renderers
    // turn near-degenerate arcs into stray wedges.
    return `M ${x0.toFixed(3)} ${y0.toFixed(3)} L ${x1.toFixed(3)} ${y1.toFixed(3)}`;
  }
  return `M ${x0.toFixed(3)} ${y0.toFixed(3)} A ${r} ${r} 0 ${span > 0.5 ? 1 : 0} 1 ${x1.toFixed(3)} ${y1.toFixed(3)}`;
}

// ---- MurmurHash3 x64-128, first 64 bits, as the ring spec says (docs/ring-spec.md) --------

const MASK = (1n << 64n) - 1n;
const C1 = 0x87c37b91114253d5n;
const C2 = 0x4cf5ad432745937fn;
const rotl = (x, r) => ((x << BigInt(r)) | (x >> BigInt(64 - r))) & MASK;
const mul = (a, b) => (a * b) & MASK;
function fmix(k) {
  k ^= k >> 33n; k = mul(k, 0xff51afd7ed558ccdn);
  k ^= k >> 33n; k = mul(k, 0xc4ceb9fe1a85ec53n);
  return k ^ (k >> 33n);
}
function littleEndian(bytes, offset, length) {
  let v = 0n;
  for (let b = length - 1; b >= 0; b--) v = (v << 8n) | BigInt(bytes[offset + b]);
  return v;
}
/** The ring position of a key: hash of its UTF-8 bytes, as a signed 64-bit BigInt. */
function position(key) {
  const bytes = new TextEncoder().encode(key);
  const n = bytes.length;
  let h1 = 0n, h2 = 0n, i = 0;
  for (; i + 16 <= n; i += 16) {
    h1 ^= mul(rotl(mul(littleEndian(bytes, i, 8), C1), 31), C2);
    h1 = (mul(rotl(h1, 27) + h2 & MASK, 5n) + 0x52dce729n) & MASK;
    h2 ^= mul(rotl(mul(littleEndian(bytes, i + 8, 8), C2), 33), C1);
    h2 = (mul(rotl(h2, 31) + h1 & MASK, 5n) + 0x38495ab5n) & MASK;
  }
  const tail = n - i;
  const k2 = tail > 8 ? littleEndian(bytes, i + 8, tail - 8) : 0n;
  const k1 = tail > 0 ? littleEndian(bytes, i, Math.min(tail, 8)) : 0n;
  h2 ^= mul(rotl(mul(k2, C2), 33), C1);
  h1 ^= mul(rotl(mul(k1, C1), 31), C2);
  h1 ^= BigInt(n); h2 ^= BigInt(n);
  h1 = (h1 + h2) & MASK; h2 = (h2 + h1) & MASK;
  h1 = fmix(h1); h2 = fmix(h2);
  return BigInt.asIntN(64, (h1 + h2) & MASK);
}

// ---- drawing -----------------------------------------------------------------------------

function colour(id) {
  if (!state.colours.has(id)) {
    const hue = (state.colours.size * 137.508) % 360; // golden angle: neighbours stay distinct
    state.colours.set(id, `hsl(${hue.toFixed(0)} 70% 55%)`);
  }
  return state.colours.get(id);
}

const SVG = 'http://www.w3.org/2000/svg';
function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function drawRing(ring) {
  const arcs = document.getElementById('arcs');
  arcs.replaceChildren();
  for (const m of ring.members) {
    const ranges = m.ranges || [];
    if (ranges.length === 0) continue;
    // One path per member: its ranges, already merged where they touch.
    const d = ranges.map(([s, e]) => arcPath(s, e, 100)).join(' ');
    const path = el('path', { d, class: 'arc', stroke: colour(m.id), 'data-member': m.id }, arcs);
    el('title', {}, path).textContent = `${m.id}: ${(m.share * 100).toFixed(1)}% of keys`;
  }
  applyHighlight();
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

/** What the table last showed: it is rebuilt only when this changes (a selection in it survives). */
let renderedTable = null;

function renderTable(ring) {
  const body = document.querySelector('#members tbody');
  // What the rows show: each report's age only when it is shown (a stale report's title), since
  // the age of every report changes at each poll.
  const reports = (ring.peers || []).map(p => [p.id, p.viewId, p.checksum, p.agrees, settlingNow(p, ring),
    p.recent === false && p.ageMillis != null ? Math.round(p.ageMillis / 1000) : null]);
  const shown = JSON.stringify([ring.members, reports, ring.viewId, ring.checksum, ring.local, ring.inRing]);
  if (shown === renderedTable) return;
  renderedTable = shown;
  body.replaceChildren();
  const peers = new Map((ring.peers || []).map(p => [p.id, p]));
  for (const m of ring.members) {
    const tr = document.createElement('tr');
    tr.dataset.member = m.id;
    const sw = cell(tr, '');
    const s = document.createElement('span');
    s.className = 'swatch';
    s.style.background = colour(m.id);
    sw.appendChild(s);
    cell(tr, m.id + (m.id === ring.local && ring.inRing !== false ? ' (this peer)' : ''), 'name');
    cell(tr, String(m.weight), 'num');
    cell(tr, m.zone || '\u2013', 'name');
    cell(tr, (m.share * 100).toFixed(1) + '%', 'num');
    cell(tr, m.primaryKeys ?? '\u2013', 'num');
    cell(tr, m.backupKeys ?? '\u2013', 'num');
    const p = peers.get(m.id);
    if (p) {
      const matches = p.checksum === ring.checksum && String(p.viewId) === String(ring.viewId);
      const same = p.agrees ?? matches;
      // A report that is not recent is neither agreement nor divergence, whatever view it names
      // (the member may have moved on since): muted, as the badge's "no recent report" is neutral.
      const stale = !same && p.recent === false;
      const state = same ? 'agree-ok' : stale || settling(p, ring) ? 'muted' : 'agree-bad';
      // A mark as well as the colour: agrees, no recent report or settling, differs.
      const mark = state === 'agree-ok' ? '\u2713' : state === 'muted' ? '\u2026' : '\u2260';
      const td = cell(tr, `${mark} ${p.viewId} / ${String(p.checksum).slice(0, 8)}`, state);
      td.dataset.checksum = p.checksum;
      td.title = `view ${p.viewId}, checksum ${p.checksum}: `
          + (state === 'agree-ok' ? 'agrees' : stale ? 'no recent report' : state === 'muted' ? 'settling' : 'differs')
          + (stale && p.ageMillis != null ? `; last report ${Math.round(p.ageMillis / 1000)} s ago` : '');
    } else {
      cell(tr, 'no report yet', 'muted');
    }
    body.appendChild(tr);
  }
}

/** Per member: the mismatch (its view, this peer's view) last seen and since when; see settling(). */
const mismatchSince = new Map();
/** How long members may report another view than this peer's before the page calls it a divergence. */
const SETTLE_MS = 5000;

/**
 * Whether a member that reports another view than this peer's is still settling: after a view
 * change each member reports its new view within about a second, so a mismatch is a divergence
 * only once it has lasted SETTLE_MS. The same view with another checksum is one at once.
 */
function settling(p, ring) {
  if (String(p.viewId) === String(ring.viewId)) {
    mismatchSince.delete(p.id); // settled: a later mismatch, even of the same pair of views, starts afresh
    return false;
  }
  const key = `${p.viewId}|${ring.viewId}`;
  const seen = mismatchSince.get(p.id);
  // One entry per member, replaced when the mismatch changes: the map stays as small as the cluster.
  if (!seen || seen.key !== key) mismatchSince.set(p.id, { key, since: Date.now() });
  return settlingNow(p, ring);
}

/** settling() without recording a new mismatch: whether the one recorded for this member still settles. */
function settlingNow(p, ring) {
  const seen = mismatchSince.get(p.id);
  return !!seen && seen.key === `${p.viewId}|${ring.viewId}` && Date.now() - seen.since < SETTLE_MS;
}

/** Sets what the log's heading says of its stream, touching the page only when it changes. */
function setLive(text) {
  const live = document.getElementById('live');
  if (live.textContent !== text) live.textContent = text;
}

/** Sets the badge, touching the page only when it changes (its role="status" would announce each write). */
function setBadge(state, text) {
  const badge = document.getElementById('agreement');
  if (badge.dataset.state !== state) badge.dataset.state = state;
  if (badge.textContent !== text) badge.textContent = text;
}

function renderAgreement(ring) {
  const peers = ring.peers || [];
  const reported = ring.members.filter(m => peers.some(p => p.id === m.id));
  // Only recent reports can disagree: a member that stopped reporting may have moved on since.
  const mismatched = peers.filter(p => ring.members.some(m => m.id === p.id) && p.recent !== false
      && (p.checksum !== ring.checksum || String(p.viewId) !== String(ring.viewId)));
  // A mismatch that ended (the member caught up, stopped reporting or left) is forgotten, so that
  // the same pair of views later (a cluster restarted while the page stayed open numbers its views
  // again) settles afresh instead of counting from the first time.
  for (const id of [...mismatchSince.keys()]) {
    if (!mismatched.some(p => p.id === id)) mismatchSince.delete(id);
  }
  const waiting = mismatched.filter(p => settling(p, ring));
  const disagree = mismatched.filter(p => !waiting.includes(p));
  // A member whose report is not recent is counted neither as agreeing nor as disagreeing.
  const stale = peers.filter(p => p.recent === false);
  if (ring.members.length === 0) {
    setBadge('unknown', 'no members in this peer\u2019s ring');
  } else if (disagree.length > 0) {
    // Another checksum, or only another view (the same ring, reported under a view id that has
    // not caught up for SETTLE_MS): said as it is.
    const what = (p) => p.checksum !== ring.checksum ? `${p.id} sees another ring`
        : `${p.id} is on view ${p.viewId}, not ${ring.viewId}`;
    setBadge('diverge', `divergence: ${disagree.map(what).join('; ')}`);
  } else if (waiting.length > 0) {
    setBadge('unknown', `settling: ${waiting.map(p => p.id).join(', ')} not on view ${ring.viewId} yet`);
  } else if (reported.length < ring.members.length || stale.length > 0) {
    setBadge('unknown', `${reported.length} of ${ring.members.length} members reported`
        + (stale.length ? ` (no recent report from ${stale.map(p => p.id).join(', ')})` : ''));
  } else {
    setBadge('agree', ring.members.length === 1 ? '1 member, no other ring to compare with'
      : `all ${ring.members.length} members agree`);
  }
}

/** A signal that aborts a fetch after ms milliseconds (AbortSignal.timeout where the browser has it). */
function timeout(ms) {
  if (typeof AbortSignal.timeout === 'function') return AbortSignal.timeout(ms);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), ms);
  return controller.signal;
}

/**
 * An error for a reply that is not 200, with the peer's reason when it gave one ("the peer is
 * starting"); its answered flag tells it from a peer that did not answer at all.
 */
async function failed(what, response) {
  let reason = '';
  try {
    const body = await response.json();
    if (body && typeof body.error === 'string') reason = `, ${body.error}`;
  } catch (notJson) {
    // no reason given
  }
  const e = new Error(`${what}: ${response.status}${reason}`);
  e.answered = true;
  return e;
}

function renderHeader(ring) {
  document.getElementById('local').textContent = ring.inRing === false
    ? `\u2013 peer ${ring.local}, refused: another peer holds its id, this one owns nothing`
    : `\u2013 peer ${ring.local}`;
  document.getElementById('view-id').textContent = ring.viewId;
  document.getElementById('checksum').textContent = ring.checksum;
  document.getElementById('vnodes').textContent = ring.virtualNodes;
  document.getElementById('replicas').textContent = ring.replicas;
}

/**
 * Shows whom a split made with POST /admin/split cuts this peer off from, or nothing when none is
 * in force (a peer that does not report it: none), touching the page only when that changes.
 */
function renderSplit(ring) {
  const cutOff = Array.isArray(ring.cutOffFrom) ? ring.cutOffFrom : [];
  const line = document.getElementById('split');
  const shown = JSON.stringify(cutOff);
  if (line.dataset.shown === shown) return;
  line.dataset.shown = shown;
  // Each id in bold, as text: ids come from the peers.
  document.getElementById('split-ids').replaceChildren(...cutOff.flatMap((id, i) => {
    const b = document.createElement('b');
    b.textContent = id;
    return i === 0 ? [b] : [', ', b];
  }));
  line.hidden = cutOff.length === 0;
}

async function refresh() {
  try {
    // Polled without ranges (megabytes for big rings); fetched with them when the ring changes.
    // Bounded: a peer that is paused or overloaded must turn the badge red, not leave it green.
    const response = await fetch('/ring?ranges=false', { cache: 'no-store', signal: timeout(3000) });
    if (!response.ok) throw await failed('GET /ring', response);
    const ring = await response.json();
    state.ring = ring;
    const key = `${ring.viewId}/${ring.checksum}`;
    if (key !== state.drawnFor) {
      let full;
      try {
        const fullResponse = await fetch('/ring', { cache: 'no-store', signal: timeout(10000) });
        if (!fullResponse.ok) throw await failed('GET /ring', fullResponse);
        full = await fullResponse.json();
      } catch (e) {
        // The peer answered the poll: what did not come is this view's ranges (megabytes for a big ring).
        throw Object.assign(new Error(`this peer's ranges of view ${ring.viewId} did not load (${e.message})`),
            { ranges: true });
      }
      // The key marked was placed on the ring drawn before: its owners may have changed.
      if (state.drawnFor !== '') state.highlight = null;
      drawRing(full);
      state.drawnFor = `${full.viewId}/${full.checksum}`;
    }
    // After the drawing, so that a failed ranges fetch leaves the header on the view drawn (the
    // header and the table show the polled view; a newer one fetched for the drawing, at the next poll).
    renderHeader(ring);
    renderSplit(ring);
    const keys = ring.members.reduce((n, m) => n + (m.primaryKeys || 0), 0);
    document.getElementById('centre-members').textContent = memberCount(ring.members);
    document.getElementById('centre-keys').textContent = `${keys} keys`;
    renderTable(ring);
    renderAgreement(ring);
    applyHighlight();
    document.querySelector('main').classList.remove('stale');
    if (stream !== null && stream.readyState === EventSource.OPEN) setLive('(live)');
  } catch (e) {
    // What the page shows is from the last answer: dimmed until the next one.
    document.querySelector('main').classList.add('stale');
    setBadge('diverge', e.ranges ? e.message
        : e.answered ? `this peer answered ${e.message}` : `this peer does not answer (${e.message})`);
    // The log's events come from this peer too: a stream the browser still holds open (the peer
    // paused, or too busy to answer) brings none either.
    if (!e.answered && !e.ranges && stream !== null && stream.readyState === EventSource.OPEN) {
      setLive('(this peer does not answer)');
    }
  } finally {
    setTimeout(refresh, 1000);
  }
}

// ---- put / get ---------------------------------------------------------------------------

function applyHighlight() {
  const marker = document.getElementById('key-marker');
  marker.replaceChildren();
  const h = state.highlight;
  document.querySelectorAll('.arc').forEach(a => {
    a.classList.toggle('owner', !!h && h.owners.includes(a.dataset.member));
    a.classList.toggle('dim', !!h && !h.owners.includes(a.dataset.member));
  });
  document.querySelectorAll('#members tbody tr').forEach(tr =>
    tr.classList.toggle('is-owner', !!h && h.owners.includes(tr.dataset.member)));
  if (!h) return;
  const [x, y] = point(fraction(h.position), 112);
  const [x0, y0] = point(fraction(h.position), 80); // a tick across the ring, clear of the centre label
  el('line', { x1: x0.toFixed(2), y1: y0.toFixed(2), x2: x.toFixed(2), y2: y.toFixed(2), class: 'marker-line' }, marker);
  el('circle', { cx: x.toFixed(2), cy: y.toFixed(2), r: 3, class: 'marker-dot' }, marker);
}

function ownerIds(body) {
  const owners = body.owners || (body.owner ? [body.owner] : []);
  return owners.map(o => (typeof o === 'string' ? o : o.id));
}

async function submitKv(event) {
  event.preventDefault();
  // event.submitter, or the button last clicked where the browser has no submitter (Safari before 15.4).
  const action = event.submitter ? event.submitter.dataset.action : state.clicked || 'get';
  state.clicked = null;
  const key = document.getElementById('key').value;
  const value = document.getElementById('value').value;
  const out = document.getElementById('kv-result');
  // Each Get or Put owns the result line until the next one starts: a slow reply (a read waiting
  // for a crashed owner) that comes after a newer one is dropped.
  const request = ++state.kvRequest;
  delete out.dataset.owners;
  state.highlight = null; // the previous key's marks go; this key's come with its reply
  applyHighlight();
  if (key === '.' || key === '..') {
    // Browsers resolve /kv/. and /kv/.. away (%2E too) before the request leaves: this page cannot
    // send them, where curl --path-as-is can.
    out.textContent = `${action} ${key}: the keys . and .. cannot be sent from a browser; use curl --path-as-is`;
    return;
  }
  out.textContent = `${action} ${key}\u2026`;
  try {
    const url = '/kv/' + encodeURIComponent(key); // throws on a lone surrogate: shown below
    // Bounded, past the peer's own deadlines, so that a request the browser holds back (every
    // connection to this peer taken) or a peer that stopped answering shows as an error.
    const response = action === 'put'
      ? await fetch(url, { method: 'PUT', body: value, headers: { 'Content-Type': 'text/plain; charset=utf-8' },
        signal: timeout(20000) })
      : await fetch(url, { signal: timeout(20000) });
    const body = await response.json().catch(() => ({}));
    if (request !== state.kvRequest) return;
    const owners = ownerIds(body);
    // Only a key the peer placed is marked: a refused one (a 400, a 503) has no owners to show.
    state.highlight = owners.length ? { position: position(key), owners } : null;
    if (!response.ok) {
      out.textContent = `${action} ${key}: ${response.status} ${body.error || ''}`;
    } else {
      const roles = owners.map((o, i) => `${o} (${i === 0 ? 'primary' : 'backup'})`).join(', ');
      out.textContent = action === 'put' ? `stored ${key} on ${roles}` : `${key} = ${body.value}, held by ${roles}`;
    }
    out.dataset.owners = owners.join(',');
    applyHighlight();
  } catch (e) {
    if (request === state.kvRequest) out.textContent = `${action} ${key} failed: ${e.message}`;
  }
}

// ---- the live log ------------------------------------------------------------------------

const pct = (f) => `${((f || 0) * 100).toFixed(1)}%`;
const names = (list) => (list || []).map(m => (typeof m === 'string' ? m : m.id)).join(', ');

/** One event of GET /events as a line of HTML (every value escaped). */
function describe(e) {
  const x = (v) => escapeHtml(String(v));
  switch (e.type) {
    case 'started':
      return `<b>${x(e.id)}</b> started in view ${x(e.viewId)} with ${memberCount(e.members)}`;
    case 'membership': {
      const parts = [];
      if (e.merge) parts.push('<b>merge</b> after a partition');
      // Left first: a member replaced under its id (restarted) is in both, and left before it joined.
      if ((e.left || []).length) parts.push(`<span class="loss">left ${x(names(e.left))}</span>`);
      if ((e.joined || []).length) parts.push(`<span class="gain">joined ${x(names(e.joined))}</span>`);
      for (const r of (e.refused || [])) parts.push(`<span class="loss">refused: ${x(r)}</span>`);
      // What each member gained and lost as primary owner: what the ring above redraws.
      const moves = (e.moved || []).map(m => {
        const changes = [];
        if (m.gainedRanges) changes.push(`<span class="gain">gained ${x(m.gainedRanges)} ranges (${pct(m.gainedFraction)})${(m.from || []).length ? ' from ' + x(m.from.join(', ')) : ''}</span>`);
        if (m.lostRanges) changes.push(`<span class="loss">lost ${x(m.lostRanges)} ranges (${pct(m.lostFraction)})${(m.to || []).length ? ' to ' + x(m.to.join(', ')) : ''}</span>`);
        return `<li class="move"><b>${x(m.id)}</b> ${changes.join(', ')}</li>`;
      });
      return `view ${x(e.viewId)}: ${parts.join(' \u00b7 ') || 'no change'} (${memberCount(e.members)})`
        + (moves.length ? `<ul class="moves">${moves.join('')}</ul>` : '');
    }
    case 'ownership': {
      // sources and destinations name every member; the ranges listed may be only the first ones.
      const from = e.sources || [...new Set((e.gained || []).flatMap(g => g.sources || []))];
      let to = e.destinations || [...new Set((e.lost || []).flatMap(l => l.destinations || []))];
      const parts = [`this peer, ${x(e.reason || 'view')} ${x(e.viewId)}:`];
      if (e.refused) {
        // Refused: another peer holds this peer's id, and takes over what this one held under it.
        parts[0] = `this peer, ${x(e.reason || 'view')} ${x(e.viewId)}: <b>refused</b>, another peer holds its id;`;
        to = to.map(id => id === e.self ? `${id} (the peer that kept the id)` : id);
      }
      if (e.gainedRanges) parts.push(`<span class="gain">gained ${x(e.gainedRanges)} ranges (${pct(e.gainedFraction)})${from.length ? ' from ' + x(from.join(', ')) : ''}</span>`);
      if (e.lostRanges) parts.push(`<span class="loss">lost ${x(e.lostRanges)} ranges (${pct(e.lostFraction)})${to.length ? ' to ' + x(to.join(', ')) : ''}</span>`);
      if (e.roleChanges) parts.push(`${x(e.roleChanges)} role changes`);
      return parts.join(' ');
    }
    case 'migration': {
      // A retry brings in what the failed pull for its view did not; a drain pass hands on, entry
      // by entry (no ranges), what the leave's hand-off left.
      const drain = e.reason === 'drain';
      const listed = [drain ? '' : `${x(e.ranges)} ranges`, (e.peers || []).length ? x(names(e.peers)) : '']
        .filter(s => s).join(', ');
      const why = e.reason === 'retry' ? `, the pull for view ${x(e.viewId)} tried again`
        : drain ? `, a pass of the leave's drain` : '';
      return `<span class="${e.direction === 'in' ? 'gain' : 'loss'}">${x(e.keys)} keys moved ${x(e.direction)}</span>`
        + `${listed ? ` (${listed})` : ''} in ${x(e.millis)} ms${why}`
        + (e.ok === false ? ' <b>incomplete</b>' : '');
    }
    case 'sweep':
      return `swept ${x(e.keys)} stray keys to ${x(names(e.peers))}`;
    case 'repair':
      return `after the merge, re-sent ${x(e.keys)} keys to their owners in ${x(e.millis)} ms`
        + (e.ok === false ? ' <b>incomplete</b>' : '');
    case 'divergence':
      return `<span class="loss"><b>divergence</b> (${x(e.kind)}): ${x(e.peer)} has checksum ${x(e.peerChecksum)}, this peer ${x(e.localChecksum)}</span>`;
    case 'received':
      return `received ${x(e.keys)} keys from ${x(e.from)} (${x(e.kind)})`;
    case 'gap':
      return `<span class="loss"><b>${x(e.missed)} events missed</b> while this page was not connected (the ring above is current)</span>`;
    case 'leaving':
      return `<b>${x(e.id)}</b> is leaving: handing off its keys`;
    default:
      return x(e.type || 'event') + ' ' + x(JSON.stringify(e));
  }
}

/** "1 member" or "N members", for a list of members (none if it is missing). */
function memberCount(members) {
  const n = Array.isArray(members) ? members.length : 0;
  return n === 1 ? '1 member' : `${n} members`;
}

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/**
 * The open event stream, or null: none while the tab is hidden. A browser allows six connections
 * to one host and port, and each stream holds one for as long as it is open, so six tabs on one
 * peer would leave none for the page's requests.
 */
let stream = null;
/** The id of the last event the log shows, or null: a new stream names it and gets only newer ones. */
let lastEventId = null;

function follow() {
  if (stream !== null || document.hidden) return;
  const live = document.getElementById('live');
  // The browser's own reconnects name the last event seen (a header); a new stream, after the tab
  // was hidden or the peer refused a place, names it in the query. The peer then sends only newer
  // events, after a "gap" line if some are no longer buffered; to a peer restarted since, the id
  // is unknown, and it sends all it has, which are new to this log too.
  const seen = lastEventId;
  const source = new EventSource(seen === null ? '/events' : `/events?lastEventId=${encodeURIComponent(seen)}`);
  stream = source;
  let fresh = seen === null;
  source.onopen = () => {
    live.textContent = '(live)';
    // A first stream starts with the peer's buffered events: the log starts with them.
    if (fresh) {
      document.getElementById('log').replaceChildren();
      fresh = false;
    }
  };
  source.onerror = () => {
    live.textContent = '(reconnecting\u2026)';
    // The browser retries a dropped stream by itself, but gives up for good on a refusal (a 503
    // when the peer has too many subscribers): try again later, as the peer frees places.
    if (source.readyState === EventSource.CLOSED && stream === source) {
      stream = null;
      setTimeout(follow, 5000);
    }
  };
  source.onmessage = (message) => {
    if (message.lastEventId) lastEventId = message.lastEventId;
    let e;
    try { e = JSON.parse(message.data); } catch { return; }
    const li = document.createElement('li');
    const when = e.time || e.timestamp;
    const t = document.createElement('time');
    t.textContent = when ? new Date(when).toLocaleTimeString() : new Date().toLocaleTimeString();
    li.appendChild(t);
    const span = document.createElement('span');
    span.innerHTML = describe(e);
    li.appendChild(span);
    const log = document.getElementById('log');
    log.prepend(li);
    while (log.children.length > 200) log.lastChild.remove();
  };
}

/** Closes the stream while the tab is hidden; a new one, when it shows again, sends what the log missed. */
function pauseWhileHidden() {
  if (!document.hidden) {
    follow();
  } else {
    if (stream !== null) {
      stream.close();
      stream = null;
    }
    document.getElementById('live').textContent = '(paused while the tab is hidden)';
  }
}

if (typeof document !== 'undefined') {
  document.getElementById('kv-form').addEventListener('submit', submitKv);
  for (const b of document.querySelectorAll('#kv-form button')) {
    b.addEventListener('click', () => { state.clicked = b.dataset.action; });
  }
  document.addEventListener('visibilitychange', pauseWhileHidden);
  refresh();
  pauseWhileHidden(); // a page opened in a background tab says it waits to be shown, not that it connects
}
if (typeof module !== 'undefined') module.exports = { position, fraction, spanOf, arcPath };

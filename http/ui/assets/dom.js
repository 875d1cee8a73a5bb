// Small DOM helpers: every text goes through textContent (never
// innerHTML), so nothing the server returns can become markup.

// h builds an element: h('a', {href: '/ui/'}, 'text', child, ...).
// Attributes starting with "on" are listeners; null/false children are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// replace swaps el's children for the given ones.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// status renders a status as a badge.
export function status(s) {
  return h('span', {class: `status status-${s || 'unknown'}`}, s || '—');
}

export function short(id) { return (id || '').slice(0, 8); }

// time formats Unix nanoseconds (or an ISO string) in local time.
export function time(t) {
  if (!t) return '—';
  const d = typeof t === 'number' ? new Date(t / 1e6) : new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

// table renders rows with a header; cols: [[heading, row => cell], ...].
export function table(label, cols, rows, empty = 'None.') {
  if (!rows.length) return h('p', {class: 'muted'}, empty);
  return h('table', {'aria-label': label},
    h('thead', {}, h('tr', {}, cols.map(([name]) => h('th', {scope: 'col'}, name)))),
    h('tbody', {}, rows.map(r => h('tr', {}, cols.map(([, f]) => h('td', {}, f(r)))))));
}

// errorBox shows an API error; a 403 as "permission denied: <message>".
export function errorBox(err) {
  return h('p', {class: 'error', role: 'alert'}, errorText(err));
}

export function errorText(err) {
  if (err && err.status === 403) return `permission denied: ${err.message}`;
  return err && err.message ? err.message : String(err);
}

// actionButton runs act on a press and says how it went in msg. A busy
// button is marked (aria-busy), not disabled: disabling it would drop the
// keyboard focus.
export function actionButton(label, act, msg, cls) {
  const name = label.toLowerCase().replace(/ /g, '-');
  const b = h('button', {type: 'button', class: cls, 'data-action': name, onclick: async () => {
    if (b.getAttribute('aria-busy') === 'true') return;
    b.setAttribute('aria-busy', 'true');
    try {
      await act();
      msg.textContent = `${label}: done`;
    } catch (err) {
      msg.textContent = `${label}: ${errorText(err)}`;
    }
    b.removeAttribute('aria-busy');
  }}, label);
  return b;
}

// link is an in-app link (the router intercepts its clicks).
export function link(href, ...children) { return h('a', {href}, ...children); }

// enc encodes a path segment.
export const enc = encodeURIComponent;

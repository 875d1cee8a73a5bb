// The single-page app: a router over /ui/..., the session (token) box,
// and each page's scope (what to close when it is left).
import {h, replace, errorText} from './dom.js';
import {capabilities, getToken, setToken} from './api.js';
import {navigate, setRouter} from './nav.js';

const routes = [
  [/^\/ui\/?$/, () => import('./pages/deployments.js'), 'deployments'],
  [/^\/ui\/jobs\/?$/, () => import('./pages/jobs.js'), 'jobs'],
  [/^\/ui\/jobs\/run\/?$/, () => import('./pages/run.js'), 'run'],
  [/^\/ui\/jobs\/([^/]+)\/([^/]+)$/, () => import('./pages/job.js'), 'jobs'],
  [/^\/ui\/deployments\/([^/]+)$/, () => import('./pages/history.js'), 'deployments'],
  [/^\/ui\/allocations\/([^/]+)$/, () => import('./pages/alloc.js'), 'deployments'],
  [/^\/ui\/nodes(?:\/([^/]+))?\/?$/, () => import('./pages/nodes.js'), 'nodes'],
  [/^\/ui\/acl\/binding-rules\/?$/, () => import('./pages/rules.js'), 'binding-rules'],
  [/^\/ui\/acl\/auth-methods\/?$/, () => import('./pages/methods.js'), 'auth-methods'],
  [/^\/ui\/acl\/explain\/?$/, () => import('./pages/explain.js'), 'explain'],
];

let scope = null;

// Scope is a mounted page's life: its cleanups run when it is left.
class Scope {
  constructor() { this.cleanups = []; this.closed = false; }
  onClose(fn) { this.cleanups.push(fn); }
  close() { this.closed = true; for (const f of this.cleanups.splice(0)) f(); }
}

async function route() {
  if (scope) scope.close();
  const current = scope = new Scope();
  const main = document.getElementById('main');
  const path = location.pathname;
  for (const [re, page, nav] of routes) {
    const m = path.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll('nav a')) {
      if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    replace(main, h('p', {}, 'Loading…'));
    try {
      // A page's module is fetched when it is first opened (the browser
      // keeps it): the first paint waits for one page, not all of them.
      const mod = await page();
      if (current.closed) return; // left while it loaded
      await mod.mount(main, m.slice(1).map(s => s && decodeURIComponent(s)), current);
    } catch (e) {
      replace(main, h('h1', {}, 'Error'), h('p', {class: 'error', role: 'alert'}, errorText(e)));
    }
    return;
  }
  replace(main, h('h1', {}, 'Not found'), h('p', {}, `No page at ${path}.`));
}

setRouter(route);

document.addEventListener('click', (e) => {
  const a = e.target.closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/ui')) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', route);

// session renders the token box: with ACLs on, a login form or the
// current token with a log-out button.
async function session() {
  const box = document.getElementById('session');
  let caps;
  try {
    caps = await capabilities();
  } catch (e) {
    if (e.status === 403 && getToken()) {
      setToken('');
      await session();
      showLoginError(`The token was refused: ${e.message}`);
      return true; // the token was dropped: the page must be read again

    }
    replace(box, h('span', {class: 'error'}, errorText(e)));
    return;
  }
  menu(caps);
  if (!caps.ACLEnabled) {
    replace(box, h('span', {class: 'muted'}, 'ACLs are off'));
    return;
  }
  if (getToken()) {
    replace(box, h('span', {id: 'whoami'}, `Token: ${caps.Description || caps.AccessorID.slice(0, 8)}`), ' ',
      h('button', {type: 'button', id: 'logout', onclick: () => { setToken(''); session(); route(); }}, 'Log out'));
    return;
  }
  const input = h('input', {type: 'password', id: 'token', name: 'token', autocomplete: 'off', 'aria-label': 'ACL token secret', placeholder: 'ACL token secret'});
  replace(box, h('form', {id: 'login', onsubmit: async (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    await session();
    route();
  }}, input, h('button', {type: 'submit', class: 'primary'}, 'Log in'), h('span', {id: 'login-error', class: 'error', role: 'alert'})));
}

// menu shows only the pages the token may read (a page opened by its URL
// still says "permission denied" when it may not).
function menu(caps) {
  const shown = {
    'nodes': caps.Node !== '',
    'binding-rules': caps.ACL !== '',
    'auth-methods': caps.ACL !== '',
    'explain': caps.ACL === 'write', // explaining a login needs acl:write
  };
  for (const a of document.querySelectorAll('nav a[data-nav]')) {
    const ok = shown[a.dataset.nav];
    a.parentElement.hidden = ok === false;
  }
}

function showLoginError(msg) {
  const el = document.getElementById('login-error');
  if (el) el.textContent = msg;
}

// The page's data and the session box load side by side: a page needs the
// token (session storage), not the session box.
route();
session().then(dropped => { if (dropped) route(); });

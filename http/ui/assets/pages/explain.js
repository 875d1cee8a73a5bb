// Login explain: for an auth method and a pasted JWT (or the claims of a
// test identity), which binding rules match, why the others do not, and
// the token that login would mint (POST /v1/acl/auth-method/:name/explain).
import {h, replace, table, errorText, enc} from '../dom.js';
import {get, post} from '../api.js';
import {follow} from '../live.js';

export async function mount(main, _params, scope) {
  const q = new URLSearchParams(location.search);
  const out = h('section', {id: 'explain-result', 'aria-live': 'polite'});
  const method = h('select', {id: 'explain-method', name: 'method', required: true});
  const mode = h('select', {id: 'explain-mode', name: 'mode'}, h('option', {value: 'jwt'}, 'a JWT'), h('option', {value: 'claims'}, 'claims (JSON)'));
  const input = h('textarea', {id: 'explain-input', name: 'input', rows: '6', cols: '80', spellcheck: 'false', 'aria-describedby': 'explain-error'});
  const err = h('p', {class: 'error', id: 'explain-error', role: 'alert'});
  const methodsErr = h('p', {class: 'error', id: 'explain-methods-error', role: 'alert'});
  replace(main, h('h1', {}, 'Login explain'),
    h('p', {class: 'muted'}, 'Paste a JWT, or the claims of a test identity, and see which binding rules a login with it would match, why the others would not, and the token it would get. Nothing is minted.'),
    h('form', {id: 'explain-form', onsubmit: async (e) => {
      e.preventDefault();
      err.textContent = '';
      let body;
      if (mode.value === 'jwt') body = {BearerToken: input.value.trim()};
      else {
        try { body = {Claims: JSON.parse(input.value)}; } catch (x) { err.textContent = `The claims are not valid JSON: ${x.message}`; return; }
      }
      try {
        const {data} = await post(`/v1/acl/auth-method/${enc(method.value)}/explain`, body);
        render(out, data);
      } catch (x) {
        err.textContent = errorText(x);
        replace(out);
      }
    }},
    h('div', {class: 'field'}, h('label', {for: 'explain-method'}, 'Auth method'), method, methodsErr),
    h('div', {class: 'field'}, h('label', {for: 'explain-mode'}, 'Identity given as'), mode),
    h('div', {class: 'field'}, h('label', {for: 'explain-input'}, 'JWT or claims'), input),
    err, h('button', {type: 'submit', class: 'primary'}, 'Explain')), out);
  // The methods offered follow the event stream (a method made or deleted
  // elsewhere shows up); the choice made is kept.
  const loadMethods = async () => {
    const {data, index} = await get('/v1/acl/auth-methods');
    const chosen = method.value || q.get('method');
    replace(method, (data || []).map(m => h('option', {value: m.Name, selected: m.Name === chosen}, m.Name)));
    methodsErr.textContent = data && data.length ? '' : 'There is no auth method to explain a login for.';
    return index;
  };
  let index = 0;
  try { index = await loadMethods(); } catch (x) { methodsErr.textContent = errorText(x); }
  follow(scope, {topics: ['ACLAuthMethod']}, index, loadMethods);
}

function render(out, r) {
  const t = r.Token || {};
  const names = (xs, f) => (xs || []).map(f).join(', ') || '—';
  replace(out, h('h2', {}, `Login with ${r.AuthMethod}`),
    r.Error ? h('p', {class: 'error', id: 'explain-login-error'}, `A login would be refused: ${r.Error}`) : null,
    h('h3', {}, 'Projected variables'),
    table('Projected variables', [['Variable', ([k]) => h('code', {}, k)], ['Value', ([, v]) => typeof v === 'string' ? v : JSON.stringify(v)]],
      Object.entries(r.ProjectedVars || {}).sort(([a], [b]) => a.localeCompare(b)), 'None.'),
    h('h3', {}, 'Binding rules'),
    table('Binding rules', [
      ['Matched', x => h('span', {class: x.Matched ? 'matched' : 'unmatched'}, x.Matched ? '✓ matched' : '✗ no match')],
      ['Rule', x => [x.Description || x.ID, h('br'), h('code', {}, x.Selector || '(no selector: matches every identity)')]],
      ['Binds', x => `${x.BindType}: ${x.BindName}`],
      ['Bound name', x => x.BoundName || '—'],
      ['Why', x => x.Reason || ''],
    ], (r.Rules || []).map(x => Object.assign({}, x)), 'The method has no binding rules.'),
    h('h3', {}, 'Token the login would mint'),
    r.Token ? h('dl', {id: 'explain-token', class: 'counts'},
      h('dt', {}, 'Roles'), h('dd', {}, names(t.Roles, x => x.Name || x.ID || String(x))),
      h('dt', {}, 'Service identities'), h('dd', {}, names(t.ServiceIdentities, x => x.ServiceName || String(x))),
      h('dt', {}, 'Node identities'), h('dd', {}, names(t.NodeIdentities, x => x.Datacenter ? `${x.NodeName} (${x.Datacenter})` : x.NodeName || String(x))),
      h('dt', {}, 'Policies'), h('dd', {}, names(t.Policies, x => x.Name || x.ID || String(x))),
      h('dt', {}, 'Local'), h('dd', {}, t.Local ? 'yes' : 'no'),
      h('dt', {}, 'Expires after'), h('dd', {}, t.ExpirationTTL || 'never')) : h('p', {class: 'muted', id: 'explain-no-token'}, 'No token would be minted.'));
}

// Auth methods: list, create, edit and delete, with the server's
// validation errors at their fields (Config errors name the config key,
// so they land at Config).
import {h, replace, table, errorBox, errorText, enc} from '../dom.js';
import {get, put, del, capabilities} from '../api.js';
import {follow} from '../live.js';
import {field, showError, clearErrors, deleteButton} from '../form.js';

export async function mount(main, _params, scope) {
  const list = h('section', {id: 'methods', 'aria-labelledby': 'methods-heading'});
  const editor = h('section', {id: 'method-editor', 'aria-labelledby': 'editor-heading'});
  replace(main, h('h1', {}, 'Auth methods'), list, editor);
  let caps = null;
  try { caps = await capabilities(); } catch (e) { caps = null; }
  const canWrite = caps && caps.ACL === 'write';
  const f = {
    Name: field('Name', 'Name', h('input', {required: true, autocomplete: 'off'})),
    Type: field('Type', 'Type', h('select', {}, h('option', {value: 'jwt'}, 'jwt'))),
    DisplayName: field('DisplayName', 'Display name', h('input', {autocomplete: 'off'})),
    Description: field('Description', 'Description', h('input', {autocomplete: 'off'})),
    MaxTokenTTL: field('MaxTokenTTL', 'Max token TTL (e.g. 1h)', h('input', {autocomplete: 'off'})),
    TokenLocality: field('TokenLocality', 'Token locality', h('select', {}, ['', 'local', 'global'].map(v => h('option', {value: v}, v || '(default)')))),
    Config: field('Config', 'Config (JSON)', h('textarea', {rows: '8', cols: '60', spellcheck: 'false'})),
  };
  // Config errors name their key (JWKSURL, BoundAudiences, ClaimMappings…).
  f.Config.aliases = ['config', 'JWKS', 'JWTValidationPubKeys', 'OIDCDiscoveryURL', 'BoundAudiences', 'BoundIssuer', 'ClaimMappings', 'ListClaimMappings', 'JWTSupportedAlgs'];
  f.MaxTokenTTL.aliases = ['TTL', 'duration'];
  f.DisplayName.aliases = ['display name'];
  const fields = Object.values(f);
  const formErr = h('p', {class: 'error', id: 'form-error', role: 'alert'});
  let editing = null;

  function edit(m) {
    editing = m;
    f.Name.input.value = m ? m.Name : '';
    f.Name.input.disabled = !!m;
    f.Type.input.value = m ? m.Type : 'jwt';
    f.DisplayName.input.value = m ? m.DisplayName || '' : '';
    f.Description.input.value = m ? m.Description || '' : '';
    f.MaxTokenTTL.input.value = m && m.MaxTokenTTL ? m.MaxTokenTTL : '';
    f.TokenLocality.input.value = m ? m.TokenLocality || '' : '';
    f.Config.input.value = m ? JSON.stringify(m.Config || {}, null, 2) : '{\n  "JWTValidationPubKeys": []\n}';
    clearErrors(fields, formErr);
    render();
  }

  function render() {
    if (!canWrite) return replace(editor);
    replace(editor, h('h2', {id: 'editor-heading'}, editing ? `Edit ${editing.Name}` : 'New auth method'),
      h('form', {id: 'method-form', novalidate: true, onsubmit: async (e) => {
        e.preventDefault();
        let config;
        try { config = JSON.parse(f.Config.input.value || '{}'); } catch (err) {
          return showError(fields, formErr, `Config is not valid JSON: ${err.message}`);
        }
        const body = {Name: f.Name.input.value.trim(), Type: f.Type.input.value, DisplayName: f.DisplayName.input.value.trim(),
          Description: f.Description.input.value.trim(), TokenLocality: f.TokenLocality.input.value, Config: config};
        if (f.MaxTokenTTL.input.value.trim()) body.MaxTokenTTL = f.MaxTokenTTL.input.value.trim();
        try {
          await put(editing ? `/v1/acl/auth-method/${enc(editing.Name)}` : '/v1/acl/auth-method', body);
          edit(null);
          formErr.textContent = 'Saved.';
        } catch (err) {
          showError(fields, formErr, errorText(err));
        }
      }}, fields.map(fl => fl.el), formErr,
      h('div', {class: 'actions'}, h('button', {type: 'submit', class: 'primary'}, editing ? 'Save' : 'Create'),
        editing ? h('button', {type: 'button', onclick: () => edit(null)}, 'Cancel') : null)));
  }

  async function load() {
    const heading = h('h2', {id: 'methods-heading'}, 'Methods');
    let res;
    try { res = await get('/v1/acl/auth-methods'); } catch (e) { replace(list, heading, errorBox(e)); return 0; }
    replace(list, heading, table('Auth methods', [
      ['Name', m => m.Name],
      ['Type', m => m.Type],
      ['Display name', m => m.DisplayName || ''],
      ['Description', m => m.Description || ''],
      ['Login explain', m => h('a', {href: `/ui/acl/explain?method=${enc(m.Name)}`}, 'explain a login')],
      ['Actions', m => canWrite ? h('div', {class: 'actions'},
        h('button', {type: 'button', 'aria-label': `Edit ${m.Name}`, onclick: async () => {
          try { edit((await get(`/v1/acl/auth-method/${enc(m.Name)}`)).data); } catch (err) { formErr.textContent = errorText(err); }
        }}, 'Edit'),
        deleteButton(`Delete ${m.Name} (its binding rules and the tokens it made go with it)`, () => del(`/v1/acl/auth-method/${enc(m.Name)}`),
          (err) => { formErr.textContent = errorText(err); })) : '—'],
    ], res.data, 'No auth methods.'));
    if (!editor.firstChild) edit(null);
    return res.index;
  }

  const index = await load();
  follow(scope, {topics: ['ACLAuthMethod']}, index, load);
}

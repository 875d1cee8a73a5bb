// Binding rules: list, create, edit and delete, with the server's
// validation errors at their fields.
import {h, replace, table, short, errorBox, errorText} from '../dom.js';
import {get, put, del, capabilities} from '../api.js';
import {follow} from '../live.js';
import {field, showError, clearErrors, deleteButton} from '../form.js';

export async function mount(main, _params, scope) {
  const list = h('section', {id: 'rules', 'aria-labelledby': 'rules-heading'});
  const editor = h('section', {id: 'rule-editor', 'aria-labelledby': 'editor-heading'});
  replace(main, h('h1', {}, 'Binding rules'), list, editor);
  let caps = null;
  try { caps = await capabilities(); } catch (e) { caps = null; }
  const canWrite = caps && caps.ACL === 'write';
  let methods = [];

  const f = {
    AuthMethod: field('AuthMethod', 'Auth method', h('input', {required: true, list: 'method-names', autocomplete: 'off'})),
    Description: field('Description', 'Description', h('input', {autocomplete: 'off'})),
    Selector: field('Selector', 'Selector (bexpr over the identity\'s fields)', h('input', {autocomplete: 'off', class: 'mono'})),
    BindType: field('BindType', 'Bind type', h('select', {}, ['service', 'node', 'role'].map(t => h('option', {value: t}, t)))),
    BindName: field('BindName', 'Bind name', h('input', {required: true, autocomplete: 'off', class: 'mono'})),
  };
  // Messages name fields their own way: "invalid bind name", "no AuthMethod is set".
  f.BindName.aliases = ['bind name'];
  f.BindType.aliases = ['bind type'];
  f.AuthMethod.aliases = ['auth method'];
  const fields = Object.values(f);
  const formErr = h('p', {class: 'error', id: 'form-error', role: 'alert'});
  let editing = null;

  function edit(rule) {
    editing = rule;
    for (const fl of fields) fl.input.value = rule ? rule[fl.name] || '' : (fl.name === 'BindType' ? 'service' : '');
    f.AuthMethod.input.disabled = !!rule;
    clearErrors(fields, formErr);
    renderEditor();
    f[rule ? 'Description' : 'AuthMethod'].input.focus();
  }

  function renderEditor() {
    if (!canWrite) return replace(editor);
    replace(editor, h('h2', {id: 'editor-heading'}, editing ? `Edit rule ${short(editing.ID)}` : 'New binding rule'),
      h('datalist', {id: 'method-names'}, methods.map(m => h('option', {value: m.Name}))),
      h('form', {id: 'rule-form', novalidate: true, onsubmit: async (e) => {
        e.preventDefault();
        const body = {};
        for (const fl of fields) body[fl.name] = fl.input.value.trim();
        try {
          if (editing) {
            body.ID = editing.ID;
            await put(`/v1/acl/binding-rule/${editing.ID}?ns=${encodeURIComponent(editing.Namespace || "default")}`, body);
          } else {
            await put('/v1/acl/binding-rule', body);
          }
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
    const heading = h('h2', {id: 'rules-heading'}, 'Rules');
    let res;
    try {
      res = await get('/v1/acl/binding-rules?ns=*');
      methods = (await get('/v1/acl/auth-methods?ns=*').catch(() => ({data: []}))).data || [];
    } catch (e) {
      replace(list, heading, errorBox(e));
      return 0;
    }
    replace(list, heading, table('Binding rules', [
      ['ID', r => h('span', {class: 'mono'}, short(r.ID))],
      ['Auth method', r => r.AuthMethod],
      ['Description', r => r.Description],
      ['Selector', r => h('code', {}, r.Selector || '')],
      ['Bind', r => `${r.BindType}: ${r.BindName}`],
      ['Namespace', r => r.Namespace],
      ['Actions', r => canWrite ? h('div', {class: 'actions'},
        h('button', {type: 'button', 'aria-label': `Edit rule ${short(r.ID)}`, onclick: async () => {
          try { edit((await get(`/v1/acl/binding-rule/${r.ID}?ns=${encodeURIComponent(r.Namespace)}`)).data); } catch (err) { formErr.textContent = errorText(err); }
        }}, 'Edit'),
        deleteButton(`Delete rule ${short(r.ID)}`, () => del(`/v1/acl/binding-rule/${r.ID}?ns=${encodeURIComponent(r.Namespace)}`),
          (err) => { formErr.textContent = errorText(err); })) : '—'],
    ], res.data, 'No binding rules.'));
    if (!editor.firstChild) renderEditor();
    return res.index;
  }

  const index = await load();
  follow(scope, {topics: ['ACLBindingRule', 'ACLAuthMethod']}, index, load);
}

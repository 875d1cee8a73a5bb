// Forms for ACL objects: labelled fields, and the server's validation
// error placed at the field it concerns (found by the field's name in the
// message: "Selector is invalid" goes to Selector).
import {h} from './dom.js';

// field builds a labelled input (or select/textarea) with its error slot.
export function field(name, label, input) {
  input.id = `f-${name}`;
  input.name = name;
  const err = h('p', {class: 'field-error', id: `f-${name}-error`, role: 'alert'});
  input.setAttribute('aria-describedby', err.id);
  return {name, input, err, el: h('div', {class: 'field', 'data-field': name}, h('label', {for: input.id}, label), input, err)};
}

// showError puts msg at the field the message names (the longest name
// found wins: "BindName" over "Name"), else in the form's own slot.
export function showError(fields, formErr, msg) {
  clearErrors(fields, formErr);
  const lower = msg.toLowerCase();
  let best = null;
  for (const f of fields) {
    const keys = [f.name, ...(f.aliases || [])];
    for (const k of keys) {
      if (lower.includes(k.toLowerCase()) && (!best || k.length > best.len)) best = {f, len: k.length};
    }
  }
  if (best) {
    best.f.err.textContent = msg;
    best.f.input.setAttribute('aria-invalid', 'true');
    best.f.input.focus();
  } else {
    formErr.textContent = msg;
  }
}

export function clearErrors(fields, formErr) {
  for (const f of fields) { f.err.textContent = ''; f.input.removeAttribute('aria-invalid'); }
  formErr.textContent = '';
}

// deleteButton asks once more in place (no modal dialog): the first press
// turns it into "Confirm delete", the second runs del.
export function deleteButton(label, del, onError) {
  const b = h('button', {type: 'button', class: 'danger', 'aria-label': label, 'data-action': 'delete', onclick: async () => {
    if (b.dataset.armed !== 'true') {
      b.dataset.armed = 'true';
      b.textContent = 'Confirm delete';
      b.setAttribute('aria-label', `Confirm: ${label}`);
      return;
    }
    try { await del(); } catch (err) { onError(err); }
  }}, 'Delete');
  return b;
}

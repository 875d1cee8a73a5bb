// Deployments, the landing page: every deployment the token may read,
// across namespaces, newest first, a page at a time (the server pages:
// per_page, next_token, reverse), filtered by status and job (the
// server's filter expression).
import {h, replace, table, status, short, time, errorBox, enc} from '../dom.js';
import {get} from '../api.js';
import {follow} from '../live.js';

export const PER_PAGE = 25;
const STATUSES = ['', 'running', 'paused', 'pending', 'blocked', 'unblocking', 'initializing', 'successful', 'failed', 'cancelled'];

export async function mount(main, _params, scope) {
  const q = new URLSearchParams(location.search);
  const state = {status: q.get('status') || '', job: q.get('job') || '', tokens: [''], page: 0};
  const statusSel = h('select', {id: 'filter-status', name: 'status'}, STATUSES.map(s => h('option', {value: s, selected: s === state.status}, s || 'any')));
  const jobInput = h('input', {id: 'filter-job', name: 'job', value: state.job, placeholder: 'job ID', autocomplete: 'off'});
  const list = h('section', {id: 'deployments', 'aria-live': 'polite'});
  const pager = h('nav', {class: 'actions', 'aria-label': 'Pages'});
  replace(main,
    h('h1', {}, 'Deployments'),
    h('form', {class: 'filters', role: 'search', onsubmit: (e) => {
      e.preventDefault();
      state.status = statusSel.value;
      state.job = jobInput.value.trim();
      state.tokens = [''];
      state.page = 0;
      const p = new URLSearchParams();
      if (state.status) p.set('status', state.status);
      if (state.job) p.set('job', state.job);
      history.replaceState(null, '', '/ui/' + (p.toString() ? '?' + p : ''));
      load();
    }},
    h('div', {}, h('label', {for: 'filter-status'}, 'Status'), statusSel),
    h('div', {}, h('label', {for: 'filter-job'}, 'Job'), jobInput),
    h('button', {type: 'submit'}, 'Filter')),
    list, pager);

  async function load() {
    const p = new URLSearchParams({namespace: '*', reverse: 'true', per_page: String(PER_PAGE)});
    const f = [];
    if (state.status) f.push(`Status == ${JSON.stringify(state.status)}`);
    if (state.job) f.push(`JobID == ${JSON.stringify(state.job)}`);
    if (f.length) p.set('filter', f.join(' and '));
    if (state.tokens[state.page]) p.set('next_token', state.tokens[state.page]);
    let res;
    try {
      res = await get(`/v1/deployments?${p}`);
    } catch (e) {
      replace(list, errorBox(e));
      replace(pager);
      return 0;
    }
    state.tokens[state.page + 1] = res.next;
    replace(list, table('Deployments', [
      ['ID', d => h('a', {href: `/ui/deployments/${enc(d.ID)}`, class: 'mono'}, short(d.ID))],
      ['Job', d => h('a', {href: `/ui/jobs/${enc(d.Namespace)}/${enc(d.JobID)}`}, d.JobID)],
      ['Namespace', d => d.Namespace],
      ['Version', d => String(d.JobVersion)],
      ['Status', d => status(d.Status)],
      ['Description', d => d.StatusDescription],
      ['Created', d => time(d.CreateTime)],
    ], res.data, 'No deployments.'));
    replace(pager,
      h('button', {type: 'button', id: 'prev-page', disabled: state.page === 0, onclick: () => { state.page--; load(); }}, '← Newer'),
      h('span', {id: 'page-number'}, `Page ${state.page + 1}`),
      h('button', {type: 'button', id: 'next-page', disabled: !res.next, onclick: () => { state.page++; load(); }}, 'Older →'));
    return res.index;
  }

  const index = await load();
  // When the first page showed, for whoever measures (the tests do).
  performance.mark('ctlplane:deployments-rendered');
  follow(scope, {topics: ['Deployment']}, index, load);
}

// Jobs: every job the token may read, across namespaces, with its status,
// version and what its allocations are doing (the job summary).
import {h, replace, table, status, time, errorBox, enc} from '../dom.js';
import {get} from '../api.js';
import {follow} from '../live.js';

export async function mount(main, _params, scope) {
  const list = h('section', {id: 'jobs'});
  replace(main, h('h1', {}, 'Jobs'), h('p', {}, h('a', {href: '/ui/jobs/run'}, 'Run a job')), list);

  async function load() {
    let res;
    try { res = await get('/v1/jobs?namespace=*'); } catch (e) { replace(list, errorBox(e)); return 0; }
    const count = (j, k) => Object.values((j.JobSummary && j.JobSummary.Summary) || {}).reduce((n, g) => n + (g[k] || 0), 0);
    replace(list, table('Jobs', [
      ['Job', j => h('a', {href: `/ui/jobs/${enc(j.Namespace)}/${enc(j.ID)}`}, j.ID)],
      ['Namespace', j => j.Namespace],
      ['Type', j => j.Type],
      ['Status', j => status(j.Status)],
      ['Version', j => String(j.Version)],
      ['Running', j => String(count(j, 'Running'))],
      ['Starting', j => String(count(j, 'Starting'))],
      ['Failed', j => String(count(j, 'Failed'))],
      ['Submitted', j => time(j.SubmitTime)],
    ], res.data || [], 'No jobs.'));
    return res.index;
  }

  const index = await load();
  follow(scope, {topics: ['Job']}, index, load);
}

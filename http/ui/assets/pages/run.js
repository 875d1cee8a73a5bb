// Run a job: paste a job in Nomad's JSON format ({"Job": {...}}, as
// examples/*.json), plan it (the scheduler's dry run: the diff and what
// each group would do) or run it (PUT /v1/jobs), then follow it on its page.
import {h, replace, table, errorText, enc} from '../dom.js';
import {get, post, put} from '../api.js';
import {diffList} from './job.js';
import {navigate} from '../nav.js';

export async function mount(main) {
  const q = new URLSearchParams(location.search);
  const spec = h('textarea', {id: 'job-spec', name: 'job', rows: '18', cols: '90', spellcheck: 'false', 'aria-describedby': 'run-error'});
  const err = h('p', {class: 'error', id: 'run-error', role: 'alert'});
  const out = h('section', {id: 'plan-result', 'aria-live': 'polite'});
  const parse = () => {
    let doc;
    try { doc = JSON.parse(spec.value); } catch (e) { throw new Error(`The job is not valid JSON: ${e.message}`); }
    const job = doc && doc.Job ? doc.Job : doc;
    if (!job || typeof job !== 'object' || !job.ID) throw new Error('The job has no ID: paste {"Job": {"ID": …, …}} as in examples/mock-web.json');
    return job;
  };
  const planBtn = h('button', {type: 'button', id: 'plan-job', onclick: async () => {
    err.textContent = '';
    try {
      const job = parse();
      const {data} = await post(`/v1/job/${enc(job.ID)}/plan?namespace=${enc(job.Namespace || 'default')}`, {Job: job, Diff: true});
      const updates = Object.entries((data.Annotations && data.Annotations.DesiredTGUpdates) || {});
      replace(out, h('h2', {}, 'Plan'),
        table('Planned changes per group', [['Group', ([g]) => g], ...['Place', 'Stop', 'InPlaceUpdate', 'DestructiveUpdate', 'Canary', 'Ignore'].map(k => [k, ([, u]) => String(u[k] || 0)])], updates),
        Object.keys(data.FailedTGAllocs || {}).length ? h('p', {class: 'error'}, `Groups that could not be placed: ${Object.keys(data.FailedTGAllocs).join(', ')}`) : null,
        diffList(data.Diff));
    } catch (e) { err.textContent = errorText(e); }
  }}, 'Plan');
  replace(main, h('h1', {}, 'Run a job'),
    h('p', {class: 'muted'}, 'Paste a job in Nomad\'s JSON format (e.g. examples/mock-web.json). Plan shows what would change; Run registers it as a new version.'),
    h('form', {id: 'run-form', onsubmit: async (e) => {
      e.preventDefault();
      err.textContent = '';
      try {
        const job = parse();
        await put('/v1/jobs', {Job: job});
        navigate(`/ui/jobs/${enc(job.Namespace || 'default')}/${enc(job.ID)}`);
      } catch (x) { err.textContent = errorText(x); }
    }}, h('div', {class: 'field'}, h('label', {for: 'job-spec'}, 'Job (JSON)'), spec), err,
    h('div', {class: 'actions'}, planBtn, h('button', {type: 'submit', class: 'primary', id: 'run-job'}, 'Run'))), out);
  // ?job=<id>&namespace=<ns>: start from that job's current version.
  if (q.get('job')) {
    try {
      const {data} = await get(`/v1/job/${enc(q.get('job'))}?namespace=${enc(q.get('namespace') || 'default')}`);
      spec.value = JSON.stringify({Job: data}, null, 2);
    } catch (e) { err.textContent = errorText(e); }
  }
}

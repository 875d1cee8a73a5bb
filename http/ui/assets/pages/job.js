// Job: its current deployment with a progress bar per group and the
// actions the deployment's state and the token allow, its versions with
// the diff of each against the one before, and its allocations.
import {h, replace, table, status, short, time, errorBox, actionButton, enc} from '../dom.js';
import {get, put, capabilities} from '../api.js';
import {follow} from '../live.js';

const ACTIVE = ['running', 'paused', 'pending', 'blocked', 'unblocking', 'initializing'];

export async function mount(main, [ns, id], scope) {
  const q = `namespace=${enc(ns)}`;
  const header = h('section', {id: 'job'});
  const depl = h('section', {id: 'deployment', 'aria-labelledby': 'deployment-heading'});
  const versions = h('section', {id: 'versions', 'aria-labelledby': 'versions-heading'});
  const allocs = h('section', {id: 'allocations', 'aria-labelledby': 'allocations-heading'});
  replace(main, h('h1', {}, `Job ${id}`), header,
    h('p', {}, h('a', {href: `/ui/jobs/run?job=${enc(id)}&namespace=${enc(ns)}`, id: 'edit-job'}, 'Edit and run a new version')),
    depl, versions, allocs);
  let caps = null;
  try { caps = await capabilities(ns); } catch (e) { caps = null; }
  const canSubmit = caps && caps.can('submit-job');
  let countdown = null;
  // The outcome of the last action: kept across live redraws.
  const msg = h('p', {id: 'action-result', role: 'status'});
  scope.onClose(() => clearInterval(countdown));

  async function load() {
    const [job, d, v, a] = await Promise.allSettled([
      get(`/v1/job/${enc(id)}?${q}`),
      get(`/v1/job/${enc(id)}/deployment?${q}`),
      get(`/v1/job/${enc(id)}/versions?diffs=true&${q}`),
      get(`/v1/job/${enc(id)}/allocations?${q}`),
    ]);
    if (job.status === 'rejected') replace(header, errorBox(job.reason));
    else {
      const j = job.value.data;
      replace(header, h('p', {}, `Namespace ${j.Namespace} · `, status(j.Status),
        ` · version `, h('span', {id: 'job-version'}, String(j.Version)), ` · ${j.Type}`, j.Stop ? ' · stopped' : ''));
    }
    renderDeployment(d);
    renderVersions(v);
    renderAllocs(a);
    return Math.max(...[job, d, v, a].filter(r => r.status === 'fulfilled').map(r => r.value.index), 0);
  }

  function renderDeployment(res) {
    clearInterval(countdown);
    const heading = h('h2', {id: 'deployment-heading'}, 'Current deployment');
    if (res.status === 'rejected') return replace(depl, heading, errorBox(res.reason));
    const d = res.value.data;
    if (!d) return replace(depl, heading, h('p', {class: 'muted'}, 'No deployment.'));
    const deadlines = [];
    const groups = Object.entries(d.TaskGroups || {}).sort(([a], [b]) => a.localeCompare(b)).map(([name, g]) => {
      const canaries = (g.PlacedCanaries || []).length;
      const dl = h('span', {class: 'deadline'});
      deadlines.push([dl, g.RequireProgressBy]);
      return h('section', {class: 'group', 'data-group': name, 'aria-label': `Group ${name}`},
        h('h3', {}, name),
        h('progress', {max: String(Math.max(g.DesiredTotal, 1)), value: String(g.HealthyAllocs), 'aria-label': `${name}: ${g.HealthyAllocs} of ${g.DesiredTotal} healthy`}),
        h('dl', {class: 'counts'},
          h('dt', {}, 'Desired'), h('dt', {}, 'Placed'), h('dt', {}, 'Healthy'), h('dt', {}, 'Unhealthy'), h('dt', {}, 'Canaries'), h('dt', {}, 'Promoted'), h('dt', {}, 'Progress deadline'),
          h('dd', {'data-count': 'desired'}, String(g.DesiredTotal)),
          h('dd', {'data-count': 'placed'}, String(g.PlacedAllocs)),
          h('dd', {'data-count': 'healthy'}, String(g.HealthyAllocs)),
          h('dd', {'data-count': 'unhealthy'}, String(g.UnhealthyAllocs)),
          h('dd', {'data-count': 'canaries'}, `${canaries}/${g.DesiredCanaries}`),
          h('dd', {'data-count': 'promoted'}, g.DesiredCanaries ? (g.Promoted ? 'yes' : 'no') : '—'),
          h('dd', {}, dl)));
    });
    const tick = () => {
      for (const [el, by] of deadlines) {
        if (!by || !ACTIVE.includes(d.Status)) { el.textContent = '—'; continue; }
        const left = Math.round((new Date(by) - Date.now()) / 1000);
        el.textContent = left > 0 ? `${Math.floor(left / 60)}m ${left % 60}s left` : 'passed';
      }
    };
    tick();
    countdown = setInterval(tick, 1000);
    // A live redraw must not drop the keyboard focus: keep it on the same
    // action, or the next one offered (Pause becomes Resume).
    const focused = depl.contains(document.activeElement) ? document.activeElement.dataset.action || 'other' : null;
    replace(depl, heading,
      h('p', {}, h('a', {href: `/ui/deployments/${enc(d.ID)}`, class: 'mono'}, short(d.ID)), ' ',
        status(d.Status), ` version ${d.JobVersion} · ${d.StatusDescription} · `,
        h('a', {href: `/ui/deployments/${enc(d.ID)}`}, 'history')),
      canSubmit ? actions(d, msg) : null, msg, groups);
    if (focused) {
      const again = depl.querySelector(`button[data-action="${focused}"]`) || depl.querySelector('button[data-action]') || depl.querySelector('a');
      if (again) again.focus();
    }
  }

  function actions(d, msg) {
    const needsPromotion = Object.values(d.TaskGroups || {}).some(g => g.DesiredCanaries > 0 && !g.Promoted);
    const act = (label, path, body, cls) => actionButton(label,
      () => put(`/v1/deployment/${path}/${enc(d.ID)}`, Object.assign({DeploymentID: d.ID}, body)), msg, cls);
    const btns = [];
    if (d.Status === 'running' && needsPromotion) btns.push(act('Promote', 'promote', {All: true}, 'primary'));
    if (d.Status === 'running') btns.push(act('Pause', 'pause', {Pause: true}));
    if (d.Status === 'paused') btns.push(act('Resume', 'pause', {Pause: false}));
    if (ACTIVE.includes(d.Status)) btns.push(act('Fail', 'fail', {}, 'danger'));
    return btns.length ? h('div', {class: 'actions', role: 'group', 'aria-label': 'Deployment actions'}, btns) : null;
  }

  function renderVersions(res) {
    const heading = h('h2', {id: 'versions-heading'}, 'Versions');
    if (res.status === 'rejected') return replace(versions, heading, errorBox(res.reason));
    const {Versions: vs, Diffs: diffs} = res.value.data;
    replace(versions, heading, h('ul', {class: 'versions'}, vs.map((v, i) => h('li', {'data-version': String(v.Version)},
      h('strong', {}, `Version ${v.Version}`), v.Stable ? ' (stable)' : '', ` · submitted ${time(v.SubmitTime)}`,
      i + 1 < vs.length ? diffList(diffs && diffs[i]) : h('p', {class: 'muted'}, 'First version.')))));
  }

  function renderAllocs(res) {
    const heading = h('h2', {id: 'allocations-heading'}, 'Allocations');
    if (res.status === 'rejected') return replace(allocs, heading, errorBox(res.reason));
    replace(allocs, heading, allocTable(res.value.data));
  }

  const index = await load();
  follow(scope, {topics: [`Job:${id}`, `Deployment:${id}`, `Allocation:${id}`], namespace: ns}, index, load);
}

export function allocTable(list) {
  return table('Allocations', [
    ['ID', a => h('a', {href: `/ui/allocations/${enc(a.ID)}`, class: 'mono'}, short(a.ID))],
    ['Group', a => a.TaskGroup],
    ['Version', a => String(a.JobVersion)],
    ['Node', a => a.NodeName || short(a.NodeID)],
    ['Desired', a => a.DesiredStatus],
    ['Status', a => status(a.ClientStatus)],
    ['Health', a => !a.DeploymentStatus || a.DeploymentStatus.Healthy == null ? '—' : (a.DeploymentStatus.Healthy ? 'healthy' : 'unhealthy') + (a.DeploymentStatus.Canary ? ' (canary)' : '')],
  ], (list || []).slice().sort((a, b) => b.CreateIndex - a.CreateIndex), 'No allocations.');
}

// diffList renders a job diff (the server's, as `job plan` prints it).
export function diffList(diff) {
  if (!diff || diff.Type === 'None') return h('p', {class: 'muted'}, 'No changes from the previous version.');
  const sign = {Added: '+', Deleted: '-', Edited: '~', None: ' '};
  const field = f => h('li', {class: `diff-${f.Type.toLowerCase()}`}, `${sign[f.Type]} ${f.Name}: `,
    f.Type === 'Added' ? f.New : f.Type === 'Deleted' ? f.Old : `${f.Old} → ${f.New}`);
  const object = o => h('li', {class: `diff-${o.Type.toLowerCase()}`}, `${sign[o.Type]} ${o.Name}`, nested(o));
  const nested = o => {
    const items = [...(o.Fields || []).filter(f => f.Type !== 'None').map(field), ...(o.Objects || []).filter(x => x.Type !== 'None').map(object),
      ...(o.TaskGroups || []).filter(x => x.Type !== 'None').map(g => h('li', {class: `diff-${g.Type.toLowerCase()}`}, `${sign[g.Type]} group ${g.Name}`, nested(g))),
      ...(o.Tasks || []).filter(x => x.Type !== 'None').map(t => h('li', {class: `diff-${t.Type.toLowerCase()}`}, `${sign[t.Type]} task ${t.Name}`, nested(t)))];
    return items.length ? h('ul', {class: 'diff'}, items) : null;
  };
  return h('details', {open: true}, h('summary', {}, 'Changes from the previous version'), nested(diff));
}

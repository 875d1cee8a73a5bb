// Deployment history: the deployment's status changes on a timeline,
// each with its cause (an operation and who asked, a watcher rule, or a
// scheduler decision), from GET /v1/deployment/history/:id.
import {h, replace, status, short, time, errorBox, enc} from '../dom.js';
import {get} from '../api.js';
import {follow} from '../live.js';

export async function mount(main, [id], scope) {
  const head = h('section', {id: 'deployment-summary'});
  const list = h('section', {id: 'history', 'aria-labelledby': 'history-heading'});
  replace(main, h('h1', {}, `Deployment ${short(id)}`), head, list);

  async function load() {
    const [d, hist] = await Promise.allSettled([get(`/v1/deployment/${enc(id)}`), get(`/v1/deployment/history/${enc(id)}`)]);
    if (d.status === 'rejected') replace(head, errorBox(d.reason));
    else {
      const dep = d.value.data;
      replace(head, h('p', {}, status(dep.Status), ` ${dep.StatusDescription} · job `,
        h('a', {href: `/ui/jobs/${enc(dep.Namespace)}/${enc(dep.JobID)}`}, dep.JobID), ` version ${dep.JobVersion} · namespace ${dep.Namespace}`));
    }
    const heading = h('h2', {id: 'history-heading'}, 'Timeline');
    if (hist.status === 'rejected') replace(list, heading, errorBox(hist.reason));
    else {
      const events = hist.value.data || [];
      replace(list, heading, events.length ? h('ol', {class: 'timeline'}, events.map(ev => h('li', {'data-status': ev.NewStatus},
        h('time', {datetime: new Date(ev.Time / 1e6).toISOString()}, time(ev.Time)), ' ',
        ev.OldStatus ? [status(ev.OldStatus), ' → '] : null, status(ev.NewStatus),
        h('p', {}, ev.Description),
        h('p', {class: 'cause'}, 'Cause: ', cause(ev.Cause)),
        h('p', {class: 'muted'}, `Raft index ${ev.Index}`)))) : h('p', {class: 'muted'}, 'No status changes yet.'));
    }
    return Math.max(...[d, hist].filter(r => r.status === 'fulfilled').map(r => r.value.index), 0);
  }

  const index = await load();
  follow(scope, {topics: [`Deployment:${id}`]}, index, load);
}

// cause says what changed the status, in words.
export function cause(c) {
  if (!c || !c.Kind) return 'unknown';
  const parts = [];
  switch (c.Kind) {
    case 'operation':
      parts.push(`${c.Operation} requested through the API`);
      if (c.AccessorID) parts.push(`by token ${short(c.AccessorID)}`);
      break;
    case 'watcher':
      parts.push(`deployment watcher rule ${c.Rule}`);
      break;
    case 'scheduler':
      parts.push(`scheduler: ${c.Rule}`);
      break;
    default:
      parts.push(c.Kind + (c.Rule ? `: ${c.Rule}` : ''));
  }
  if (c.EvalID) parts.push(`(evaluation ${short(c.EvalID)})`);
  return parts.join(' ');
}

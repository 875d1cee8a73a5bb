// Allocation: its task states and events, live logs (followed, stdout or
// stderr) and, when the token allows, restart and stop.
import {h, replace, table, status, short, time, errorBox, errorText, actionButton, enc} from '../dom.js';
import {get, put, capabilities, getToken} from '../api.js';
import {follow} from '../live.js';

export async function mount(main, [id], scope) {
  const head = h('section', {id: 'alloc-summary'});
  const tasks = h('section', {id: 'tasks', 'aria-labelledby': 'tasks-heading'});
  const logs = h('section', {id: 'logs', 'aria-labelledby': 'logs-heading'});
  replace(main, h('h1', {}, `Allocation ${short(id)}`), head, tasks, logs);
  let caps = null;
  let logsReady = false;
  // The outcome of the last action: kept across live redraws.
  const msg = h('p', {id: 'action-result', role: 'status'});

  async function load() {
    let res;
    try {
      res = await get(`/v1/allocation/${enc(id)}`);
    } catch (e) {
      replace(head, errorBox(e));
      return 0;
    }
    const a = res.data;
    if (!caps) { try { caps = await capabilities(a.Namespace); } catch (e) { caps = null; } }
    const can = caps && caps.can('alloc-lifecycle');
    const act = (label, path) => actionButton(label, () => put(path, {}), msg);
    const running = a.ClientStatus === 'running' || a.ClientStatus === 'pending';
    replace(head,
      h('p', {}, status(a.ClientStatus), ` desired ${a.DesiredStatus} · job `,
        h('a', {href: `/ui/jobs/${enc(a.Namespace)}/${enc(a.JobID)}`}, a.JobID),
        ` version ${a.JobVersion} · group ${a.TaskGroup} · node ${a.NodeName || short(a.NodeID)}`),
      can && running ? h('div', {class: 'actions'}, act('Restart', `/v1/client/allocation/${enc(id)}/restart`), act('Stop', `/v1/allocation/${enc(id)}/stop`)) : null,
      msg);
    const names = Object.keys(a.TaskStates || {}).sort();
    replace(tasks, h('h2', {id: 'tasks-heading'}, 'Tasks'), names.length ? names.map(n => {
      const ts = a.TaskStates[n];
      return h('section', {class: 'group', 'data-task': n}, h('h3', {}, n, ' ', status(ts.State), ts.Failed ? ' (failed)' : '', ` · restarts ${ts.Restarts}`),
        table(`Events of ${n}`, [['Time', e => time(e.Time)], ['Type', e => e.Type], ['Message', e => e.DisplayMessage || e.Message || '']],
          (ts.Events || []).slice().reverse(), 'No events.'));
    }) : h('p', {class: 'muted'}, 'No task has started.'));
    if (!logsReady && names.length) {
      logsReady = true;
      renderLogs(names, caps && caps.can('read-logs'));
    }
    return res.index;
  }

  let logCtl = null;
  scope.onClose(() => logCtl && logCtl.abort());
  function renderLogs(names, allowed) {
    const heading = h('h2', {id: 'logs-heading'}, 'Logs');
    if (!allowed) return replace(logs, heading, h('p', {class: 'error'}, 'permission denied: this token may not read logs (read-logs)'));
    const taskSel = h('select', {id: 'log-task'}, names.map(n => h('option', {value: n}, n)));
    const typeSel = h('select', {id: 'log-type'}, h('option', {value: 'stdout'}, 'stdout'), h('option', {value: 'stderr'}, 'stderr'));
    const out = h('pre', {class: 'logs', id: 'log-output', tabindex: '0', 'aria-label': 'Log output', 'aria-live': 'off'});
    const start = () => stream(taskSel.value, typeSel.value, out);
    taskSel.addEventListener('change', start);
    typeSel.addEventListener('change', start);
    replace(logs, heading, h('form', {class: 'inline', onsubmit: e => e.preventDefault()},
      h('div', {}, h('label', {for: 'log-task'}, 'Task'), taskSel),
      h('div', {}, h('label', {for: 'log-type'}, 'Stream'), typeSel)), out);
    start();
  }

  // stream follows one task's log with fetch (plain=true, follow=true).
  async function stream(task, type, out) {
    if (logCtl) logCtl.abort();
    logCtl = new AbortController();
    const ctl = logCtl;
    out.textContent = '';
    const p = new URLSearchParams({task, type, follow: 'true', plain: 'true', origin: 'start', offset: '0'});
    try {
      const hd = getToken() ? {'X-Service-Token': getToken()} : {};
      const r = await fetch(`/v1/client/fs/logs/${enc(id)}?${p}`, {headers: hd, signal: ctl.signal, cache: 'no-store'});
      if (!r.ok) {
        const err = new Error((await r.text()).trim());
        err.status = r.status;
        throw err;
      }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        const stick = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
        out.textContent += dec.decode(value, {stream: true});
        if (stick) out.scrollTop = out.scrollHeight;
      }
    } catch (e) {
      if (!ctl.signal.aborted) out.append(`\n[${errorText(e)}]`);
    }
  }

  const index = await load();
  follow(scope, {topics: [`Allocation:${id}`]}, index, load);
}

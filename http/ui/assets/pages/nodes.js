// Nodes: each node's status, eligibility and drain with toggles (node
// write), its resources and what its allocations use, and, on a node's
// own page, its allocations.
import {h, replace, table, status, short, errorBox, actionButton, enc} from '../dom.js';
import {get, put, capabilities} from '../api.js';
import {follow} from '../live.js';
import {allocTable} from './job.js';

export async function mount(main, [nodeID], scope) {
  const list = h('section', {id: 'nodes'});
  const detail = h('section', {id: 'node-allocations'});
  replace(main, h('h1', {}, nodeID ? `Node ${short(nodeID)}` : 'Nodes'), list, detail);
  let caps = null;
  try { caps = await capabilities(); } catch (e) { caps = null; }
  const canWrite = caps && caps.Node === 'write';
  const msg = h('p', {id: 'action-result', role: 'status'});

  async function load() {
    let res;
    try {
      res = await get(nodeID ? `/v1/node/${enc(nodeID)}` : '/v1/nodes');
    } catch (e) {
      replace(list, errorBox(e));
      return 0;
    }
    const nodes = nodeID ? [res.data] : res.data;
    // What each node's allocations use: their resources, summed.
    const usage = await Promise.all(nodes.map(n => get(`/v1/node/${enc(n.ID)}/allocations`).then(r => r.data, () => null)));
    const toggle = (label, path, body) => actionButton(label, () => put(path, body), msg);
    replace(list, table('Nodes', [
      ['Name', n => h('a', {href: `/ui/nodes/${enc(n.ID)}`}, n.Name)],
      ['Pool', n => n.NodePool || 'default'],
      ['Status', n => status(n.Status)],
      ['Eligibility', n => status(n.SchedulingEligibility)],
      ['Drain', n => n.Drain ? status('draining') : 'no'],
      ['CPU (MHz) used / total', (n, i = nodes.indexOf(n)) => resources(n, usage[i], 'CPU')],
      ['Memory (MB) used / total', (n, i = nodes.indexOf(n)) => resources(n, usage[i], 'MemoryMB')],
      ['Allocations', (n, i = nodes.indexOf(n)) => usage[i] ? String(usage[i].filter(a => a.ClientStatus === 'running').length) + ' running' : '—'],
      ['Actions', n => canWrite ? h('div', {class: 'actions'},
        n.SchedulingEligibility === 'eligible'
          ? toggle('Mark ineligible', `/v1/node/${enc(n.ID)}/eligibility`, {NodeID: n.ID, Eligibility: 'ineligible'})
          : toggle('Mark eligible', `/v1/node/${enc(n.ID)}/eligibility`, {NodeID: n.ID, Eligibility: 'eligible'}),
        n.Drain
          ? toggle('Stop drain', `/v1/node/${enc(n.ID)}/drain`, {NodeID: n.ID, DrainSpec: null, MarkEligible: true})
          : toggle('Drain', `/v1/node/${enc(n.ID)}/drain`, {NodeID: n.ID, DrainSpec: {Deadline: 3600e9}})) : '—'],
    ], nodes, 'No nodes.'), msg);
    if (nodeID) replace(detail, h('h2', {}, 'Allocations'), usage[0] ? allocTable(usage[0]) : h('p', {class: 'muted'}, '—'));
    return res.index;
  }

  const index = await load();
  // Allocations move the resources in use and the counts, too.
  follow(scope, {topics: ['Node', 'Allocation']}, index, load);
}

// resources renders "used / total" of one resource of a node (Nomad's
// node JSON or ctlplane's list entry).
function resources(n, allocs, key) {
  const total = n.Resources ? n.Resources[key] : n.NodeResources ? (key === 'CPU' ? n.NodeResources.Cpu.CpuShares : n.NodeResources.Memory.MemoryMB) : 0;
  if (!allocs) return `— / ${total}`;
  let used = 0;
  for (const a of allocs) {
    if (a.ClientStatus !== 'running' && a.ClientStatus !== 'pending') continue;
    const r = a.Resources || (a.AllocatedResources && {CPU: 0, MemoryMB: 0}) || {};
    used += r[key] || 0;
  }
  return `${used} / ${total}`;
}

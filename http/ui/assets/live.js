// follow keeps a page live: after its first load (at index), each batch
// of events on its topics reloads it. Reloads are throttled, not
// debounced: a steady stream of events still reloads every 60 ms at most
// (a debounce would wait for quiet that may never come), and one reload
// runs at a time (a slow one cannot land after a newer one).
import {subscribe} from './api.js';
import {errorText} from './dom.js';

export function follow(scope, {topics, namespace = '*'}, index, reload) {
  let timer = null;
  let running = false;
  let dirty = false;
  const run = async () => {
    timer = null;
    if (scope.closed) return;
    if (running) { dirty = true; return; }
    running = true;
    try { await reload(); } catch (e) { setLive(`reload failed: ${errorText(e)}`); }
    running = false;
    if (dirty) { dirty = false; schedule(); }
  };
  const schedule = () => { if (!timer) timer = setTimeout(run, 60); };
  const sub = subscribe({topics, namespace, index: index + 1}, (batch) => {
    setLive(`live · index ${batch.Index}`);
    schedule();
  }, (err) => setLive(`event stream: ${errorText(err)}`));
  scope.onClose(() => { sub.close(); clearTimeout(timer); });
  setLive('live');
}

export function setLive(text) {
  const el = document.getElementById('live');
  if (el) el.textContent = text;
}

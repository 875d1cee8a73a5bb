// follow keeps a page live: after its first load (at index), each batch
// of events on its topics reloads it (debounced: a burst is one reload).
import {subscribe} from './api.js';
import {debounce, errorText} from './dom.js';

export function follow(scope, {topics, namespace = '*'}, index, reload) {
  const again = debounce(async () => {
    if (scope.closed) return;
    try { await reload(); } catch (e) { setLive(`reload failed: ${errorText(e)}`); }
  }, 60);
  const sub = subscribe({topics, namespace, index: index + 1}, (batch) => {
    setLive(`live · index ${batch.Index}`);
    again();
  }, (err) => setLive(`event stream: ${errorText(err)}`));
  scope.onClose(() => { sub.close(); again.cancel(); });
  setLive('live');
}

export function setLive(text) {
  const el = document.getElementById('live');
  if (el) el.textContent = text;
}

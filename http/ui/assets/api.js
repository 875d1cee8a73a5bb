// The API client: the token (session storage, sent as X-Service-Token,
// never in a URL), JSON requests, and the event stream read with fetch()
// (EventSource cannot send headers).

const TOKEN_KEY = 'ctlplane.token';

export function getToken() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}

export class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function headers(extra) {
  const hd = Object.assign({}, extra);
  const t = getToken();
  if (t) hd['X-Service-Token'] = t;
  return hd;
}

// request sends one API call. It resolves to {data, index, next} and
// rejects with an APIError carrying the server's status and message.
export async function request(method, path, body, signal) {
  const init = {method, headers: headers(), signal, cache: 'no-store'};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let r = await fetch(path, init);
  // A read during a leader election (503 No cluster leader) is tried again
  // for a few seconds; a write is not (it may have been applied).
  for (let delay = 200; method === 'GET' && r.status === 503 && delay <= 3200; delay *= 2) {
    await new Promise(res => setTimeout(res, delay));
    r = await fetch(path, init);
  }
  const text = await r.text();
  if (!r.ok) throw new APIError(r.status, text.trim() || r.statusText);
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (e) { throw new APIError(r.status, `unreadable response from ${path}: ${e.message}`); }
  }
  return {data, index: Number(r.headers.get('X-Service-Index') || 0), next: r.headers.get('X-Service-NextToken') || ''};
}

export const get = (path, signal) => request('GET', path, undefined, signal);
export const put = (path, body) => request('PUT', path, body === undefined ? {} : body);
export const post = (path, body) => request('POST', path, body);
export const del = (path) => request('DELETE', path);

// capabilities asks the server what the token may do in namespace ns
// (GET /v1/ui/capabilities, answered by the authorizer the endpoints use).
export async function capabilities(ns = 'default') {
  const {data} = await get(`/v1/ui/capabilities?namespace=${encodeURIComponent(ns)}`);
  data.can = (cap) => data.Capabilities.includes(cap);
  return data;
}

// subscribe follows GET /v1/event/stream from index on, calling onBatch
// with each {Index, Events} line (heartbeats `{}` are dropped). It
// reconnects after a break from the last index it saw; onError hears of
// breaks. close() ends it.
export function subscribe({topics, namespace = '*', index = 0}, onBatch, onError) {
  const ctl = new AbortController();
  let last = index;
  let closed = false;
  let delay = 250;
  const run = async () => {
    while (!closed) {
      const q = new URLSearchParams();
      for (const t of topics) q.append('topic', t);
      q.set('namespace', namespace);
      q.set('index', String(last));
      try {
        const r = await fetch(`/v1/event/stream?${q}`, {headers: headers(), signal: ctl.signal, cache: 'no-store'});
        if (!r.ok) throw new APIError(r.status, (await r.text()).trim());
        if (r.headers.get('X-Service-Event-Truncated') === 'true') onBatch({Index: last, Events: [], Truncated: true});
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buf += dec.decode(value, {stream: true});
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const msg = JSON.parse(line);
            if (msg.Error) throw new APIError(0, msg.Error);
            if (!msg.Events) continue; // heartbeat
            last = msg.Index + 1;
            delay = 250;
            onBatch(msg);
          }
        }
        throw new APIError(0, 'the event stream ended');
      } catch (e) {
        if (closed) return;
        if (onError) onError(e);
        // Permanent: the token may not read these, or the agent serves no stream.
        if (e.status === 403 || e.status === 501) return;
        await new Promise(res => setTimeout(res, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  };
  run();
  return {close() { closed = true; ctl.abort(); }};
}

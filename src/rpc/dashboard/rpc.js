// JSON-RPC to the node that serves this page: HTTP POST / for calls, a WebSocket for the
// store_changes subscription. With auth on, the token goes as the bearer (header over HTTP,
// `?access_token=` on the WebSocket, where a browser cannot set headers).

export const UNAUTHORIZED = -32999;

export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

let nextId = 1;

export function createRpc(getToken) {
  async function call(method, params = {}) {
    const headers = { 'content-type': 'application/json' };
    const token = getToken();
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch('/', {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: [params] }),
    });
    const body = await res.json();
    if (body.error) throw new RpcError(body.error.code, body.error.message, body.error.data);
    return body.result;
  }

  /**
   * Subscribes to store changes; reconnects after a drop. `onState(true|false)` reports the link.
   * Returns a function that stops it.
   */
  function subscribe(onChange, onState) {
    let socket;
    let stopped = false;
    const open = () => {
      const token = getToken();
      const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
      const query = token ? `?access_token=${encodeURIComponent(token)}` : '';
      socket = new WebSocket(`${scheme}://${location.host}/${query}`);
      socket.onopen = () =>
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe_store_changes', params: [] }));
      socket.onmessage = (ev) => {
        const msg = JSON.parse(ev.data);
        if (msg.id === 1) onState(!msg.error);
        else if (msg.method === 'store_changes') onChange(msg.params.result);
      };
      socket.onclose = () => {
        onState(false);
        if (!stopped) setTimeout(open, 2000);
      };
    };
    open();
    return () => {
      stopped = true;
      socket?.close();
    };
  }

  return { call, subscribe };
}

import WebSocket from 'ws';

/** A WebSocket JSON-RPC client collecting notifications. */
export async function wsClient(url: string) {
  const ws = new WebSocket(url.replace('http', 'ws'));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const notes: any[] = [];
  const pending = new Map<number, (v: any) => void>();
  let nextId = 1;
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    if ('id' in msg && pending.has(msg.id)) {
      pending.get(msg.id)!(msg);
      pending.delete(msg.id);
    } else if (msg.method) notes.push(msg);
  });
  return {
    notes,
    call(method: string, params: unknown[] = []): Promise<any> {
      const id = nextId++;
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return new Promise((resolve) => pending.set(id, resolve));
    },
    close: () => ws.close(),
  };
}

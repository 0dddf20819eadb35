/**
 * Sockets: one listener for raw TCP and WebSocket on the same port (the reference's
 * `reuse_port_for_websocket`), told apart by the first bytes — an HTTP upgrade starts with
 * `GET `, which as a secio length prefix would be a frame of ~1.2 GB, so no real secio peer
 * can start that way — and dialers for both.
 */
import http from 'node:http';
import net from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { type RawConn, socketMultiaddr, TcpConn, WsConn } from './conn.ts';
import { P2pError } from './errors.ts';
import { type GateTicket, InboundGate } from './gate.ts';
import type { DialTarget } from './multiaddr.ts';

export interface Listener {
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

/** One secio frame (8 MiB + prefix) fits; the reference only ever coalesces small frames. */
const MAX_WS_MESSAGE = 8 * 1024 * 1024 + 64;

/**
 * Each accepted socket enters `gate` until the caller's handshake proves a key (it calls
 * `ticket.leave()`); the gate bounds, times out and evicts the unauthenticated ones.
 */
export async function listen(
  host: string,
  port: number,
  onConn: (c: RawConn, ticket: GateTicket) => void,
  gate = new InboundGate(),
): Promise<Listener> {
  const tickets = new WeakMap<net.Socket, GateTicket>();
  const httpServer = http.createServer((_req, res) => {
    // Plain HTTP gets nothing here: 426 Upgrade Required, and the connection closes.
    res.writeHead(426, { Connection: 'close' }).end();
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_MESSAGE, perMessageDeflate: false });
  httpServer.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const s = req.socket;
      onConn(new WsConn(ws, `${socketMultiaddr(s.remoteAddress, s.remotePort)}/ws`), tickets.get(s)!);
    });
  });
  httpServer.on('clientError', (_e, socket) => socket.destroy());
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const ticket = gate.enter(socket.remoteAddress ?? '', () => socket.destroy());
    tickets.set(socket, ticket);
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      ticket.leave();
    });
    socket.on('error', () => socket.destroy());
    let buf: Buffer = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      if (buf.length < 4) return;
      socket.removeListener('data', onData);
      socket.pause();
      if (buf.subarray(0, 4).toString('latin1') === 'GET ') {
        socket.unshift(buf);
        httpServer.emit('connection', socket);
        socket.resume();
      } else {
        onConn(new TcpConn(socket, new Uint8Array(buf)), ticket);
        socket.resume();
      }
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as net.AddressInfo;
  return {
    host,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export const DIAL_TIMEOUT_MS = 10_000;

/** Opens a TCP or WebSocket connection (no secio yet). */
export function dial(target: DialTarget, timeoutMs = DIAL_TIMEOUT_MS): Promise<RawConn> {
  return new Promise((resolve, reject) => {
    const fail = (e: Error) => reject(new P2pError('Closed', `dial ${target.address}: ${e.message}`));
    if (target.ws) {
      const ws = new WebSocket(
        `ws://${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}/`,
        {
          handshakeTimeout: timeoutMs,
          perMessageDeflate: false,
          maxPayload: MAX_WS_MESSAGE,
        },
      );
      ws.once('open', () => {
        ws.removeAllListeners('error');
        resolve(new WsConn(ws, target.address));
      });
      ws.once('error', fail);
      return;
    }
    const socket = net.connect({ host: target.host, port: target.port });
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error('timeout'));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(new TcpConn(socket));
    });
    socket.once('error', (e) => {
      clearTimeout(timer);
      fail(e);
    });
  });
}

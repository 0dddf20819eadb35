/**
 * The baseline of `npm run bench:rpc`: a bare fastify server answering POST / with a canned
 * node_info-sized JSON-RPC result after parsing the request — the least any JSON-RPC server on
 * fastify must do. Prints its URL on stdout.
 */
import Fastify from 'fastify';

const result = JSON.parse(process.argv[2] ?? '{}');
const app = Fastify({ logger: false });
app.post('/', async (req) => {
  const body = req.body as { id: unknown };
  return { jsonrpc: '2.0', result, id: body.id };
});
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
process.stdout.write(
  `${JSON.stringify({ url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` })}\n`,
);

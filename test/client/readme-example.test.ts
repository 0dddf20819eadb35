/**
 * The README's `strand/client` example compiles under `tsc --strict` in a consumer project that
 * depends on this package (through `node_modules/strand`, resolved by package.json `exports`),
 * and misuse fails to compile: every `@ts-expect-error` below must meet an error, so types that
 * decayed to `any` fail this test.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/node-process.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const TSC = path.join(REPO, 'node_modules/typescript/bin/tsc');

/** The first `ts` code block after the README heading about the client. */
function readmeExample(): string {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### From TypeScript: `strand/client`'));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README: no ts block under "From TypeScript: `strand/client`"');
  return m[1]!;
}

const MISUSE = `
import { createClient, RpcError } from 'strand/client';
const node = createClient('http://127.0.0.1:8227');
// @ts-expect-error amounts are hex quantity strings
await node.new_invoice({ amount: 100, currency: 'Fibd' });
// @ts-expect-error currency is one of Fibb, Fibt, Fibd
await node.new_invoice({ amount: '0x64', currency: 'BTC' });
// @ts-expect-error get_payment needs its payment_hash
await node.get_payment();
// @ts-expect-error no such method
await node.send_bitcoin({});
const info = await node.node_info();
// @ts-expect-error node_name may be null
info.node_name.length;
const { channels } = await node.list_channels();
// @ts-expect-error state flags are a list
channels[0]!.state.state_flags.toUpperCase();
const e = new RpcError('node_info', { code: -32602, message: 'x' });
// @ts-expect-error codes are named by the standard names only
e.is('NotACode');
// @ts-expect-error call checks params by method name too
await node.call('get_invoice', { payment_hash: 1 });
`;

it('type-checks the README example, and refuses misuse, in a consumer project', () => {
  const dir = tempDir('strand-readme-');
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(REPO, path.join(dir, 'node_modules', 'strand'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  fs.writeFileSync(path.join(dir, 'example.ts'), readmeExample());
  fs.writeFileSync(path.join(dir, 'misuse.ts'), MISUSE);
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023'],
        types: ['node'],
        typeRoots: [path.join(REPO, 'node_modules/@types')],
        // strand ships TypeScript sources that import each other with `.ts` extensions.
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        noEmit: true,
      },
      files: ['example.ts', 'misuse.ts'],
    }),
  );
  const r = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
  expect(r.stdout + r.stderr).toBe('');
  expect(r.status).toBe(0);
}, 120_000);

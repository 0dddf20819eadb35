// @ts-check
/**
 * `strand rpc`: one JSON-RPC call, method help and shell completion, read from the OpenRPC
 * document (docs/openrpc.json, written by `npm run docs:rpc`).
 *
 * Plain JavaScript on purpose: bin/strand.js runs it before loading tsx, so a call costs a Node
 * start-up and one request (~0.1 s) instead of loading the whole node from TypeScript (~2 s).
 * It imports only Node built-ins.
 *
 *   strand rpc [--url <url> | --node <name> [-d <dir>]] [--token <t>] [--get <path>] <method> [json] [--<param> <value>…]
 *   strand rpc --list | <method> --help | completion bash|zsh
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';

const DOC_PATH = new URL('../../docs/openrpc.json', import.meta.url);

/** Options of the command itself; a method param of the same name must go in the JSON argument. */
const OPTIONS = new Set(['url', 'node', 'dir', 'token', 'get', 'list', 'help']);

const USAGE = `usage: strand rpc [options] <method> [params-json] [--<param> <value>...]
       strand rpc --list                 the methods, by module
       strand rpc <method> --help        a method's params and result
       strand rpc completion bash|zsh    a shell completion script

Params: a JSON object ('{"amount":"0x64"}'), and/or one flag per field: --funding-amount 0x64
(a flag's dashes stand for the field's underscores; a boolean flag alone is true, --no-<flag> false; objects
and arrays as JSON). Flags override fields of the JSON object.

Options:
  --url <url>       node RPC URL (default $STRAND_RPC_URL or http://127.0.0.1:8227)
  --node <name>     a devnet node by name (reads <dir>/devnet.json)
  -d, --dir <dir>   devnet directory for --node (default devnet-data)
  --token <token>   bearer token (default $STRAND_RPC_TOKEN)
  --get <path>      print only this field of the result: invoice_address, channels.0.state
`;

class UsageError extends Error {}

/** @typedef {{ type?: string | string[], properties?: Record<string, any>, required?: string[], anyOf?: any[], enum?: unknown[], pattern?: string, items?: any, description?: string }} Schema */
/** @typedef {{ name: string, summary?: string, description?: string, tags?: { name: string }[], params: { name: string, required?: boolean, schema: Schema }[], result: { schema: Schema }, examples?: { name: string, params: { value: unknown }[], result: { value: unknown } }[] }} Method */

/** @returns {{ methods: Method[] }} */
function readDocument() {
  try {
    return JSON.parse(fs.readFileSync(DOC_PATH, 'utf8'));
  } catch (e) {
    throw new UsageError(
      `cannot read ${DOC_PATH.pathname} (npm run docs:rpc writes it): ${/** @type {Error} */ (e).message}`,
    );
  }
}

/** @param {Schema} s @returns {string} */
function typeName(s) {
  if (!s) return 'any';
  if (s.anyOf) return [...new Set(s.anyOf.map(typeName))].join(' | ');
  if (s.enum) return s.enum.map(String).join('|');
  if (Array.isArray(s.type)) return s.type.join(' | ');
  if (s.type === 'array') return `${typeName(s.items)}[]`;
  if (s.type === 'string' && s.pattern) {
    if (s.pattern.startsWith('^0x(0|')) return 'hex quantity';
    if (s.pattern.includes('0[23]')) return 'pubkey';
    if (s.pattern.includes('{64}')) return 'hash';
    if (s.pattern.includes('{72}')) return 'outpoint';
    if (s.pattern.startsWith('^0x(')) return 'hex bytes';
  }
  return s.type ?? 'any';
}

/** The properties of the method's params object (empty for methods without one). */
function paramProps(/** @type {Method} */ m) {
  const p = m.params.find((x) => x.name === 'params');
  return { props: p?.schema.properties ?? {}, required: new Set(p?.schema.required ?? []) };
}

const flagOf = (/** @type {string} */ field) => `--${field.replaceAll('_', '-')}`;

function list(/** @type {Method[]} */ methods) {
  const width = Math.max(...methods.map((m) => m.name.length));
  let module = '';
  const out = [];
  for (const m of methods) {
    const tag = m.tags?.[0]?.name ?? '';
    if (tag !== module) out.push(`${out.length ? '\n' : ''}${tag}:`);
    module = tag;
    out.push(`  ${m.name.padEnd(width)}  ${m.summary ?? ''}`);
  }
  return `${out.join('\n')}\n`;
}

function help(/** @type {Method} */ m) {
  const out = [`strand rpc ${m.name}`, '', m.description ?? '', ''];
  const { props, required } = paramProps(m);
  const names = Object.keys(props);
  if (m.params.length === 0) out.push('Params: none.');
  else if (names.length === 0) out.push(`Params: ${m.params.map((p) => `<${p.name}>`).join(' ')}`);
  else {
    out.push('Params (flags, or fields of a JSON object):');
    const width = Math.max(...names.map((n) => flagOf(n).length));
    for (const n of names) {
      const type = `${typeName(props[n])}${required.has(n) ? ' (required)' : ''}`;
      out.push(
        `  ${flagOf(n).padEnd(width)}  ${type}${props[n].description ? `: ${props[n].description}` : ''}`,
      );
    }
  }
  const result = m.result.schema;
  out.push('', `Result: ${result.properties ? 'object' : typeName(result)}`);
  for (const [k, v] of Object.entries(result.properties ?? {}))
    out.push(`  ${k}: ${typeName(v)}${v.description ? ` (${v.description.replace(/\.$/, '')})` : ''}`);
  for (const ex of m.examples ?? []) {
    const p = ex.params[0]?.value;
    out.push('', `Example (${ex.name}):`, `  strand rpc ${m.name}${p ? ` '${JSON.stringify(p)}'` : ''}`);
    out.push(`  → ${JSON.stringify(ex.result.value)}`);
  }
  return `${out.join('\n')}\n`;
}

/** A flag's text as the value its schema asks for. */
function flagValue(/** @type {string} */ flag, /** @type {string} */ text, /** @type {Schema} */ schema) {
  const types = (schema.anyOf ?? [schema]).flatMap((s) => (Array.isArray(s.type) ? s.type : [s.type]));
  if (types.includes('boolean')) {
    if (text === 'true') return true;
    if (text === 'false') return false;
    throw new UsageError(`${flag}: expected true or false, got '${text}'`);
  }
  if (types.includes('object') || types.includes('array') || types.includes('integer')) {
    try {
      return JSON.parse(text);
    } catch {
      throw new UsageError(`${flag}: expected JSON (${typeName(schema)}), got '${text}'`);
    }
  }
  return text;
}

const isBoolean = (/** @type {Schema} */ s) =>
  (s.anyOf ?? [s]).some((x) => x.type === 'boolean' || (Array.isArray(x.type) && x.type.includes('boolean')));

/**
 * Splits argv into the command's options, the method, the JSON argument and the param flags.
 * @param {string[]} argv
 */
export function parseArgs(argv) {
  /** @type {Record<string, string | boolean>} */
  const opts = {};
  /** @type {string[]} */
  const positional = [];
  /** @type {[string, string | undefined][]} */
  const flags = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = /** @type {string} */ (argv[i]);
    if (arg === '-h') opts.help = true;
    else if (arg === '-d') opts.dir = argv[++i] ?? '';
    else if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = (eq < 0 ? arg.slice(2) : arg.slice(2, eq)).replaceAll('-', '_');
      const inline = eq < 0 ? undefined : arg.slice(eq + 1);
      if (OPTIONS.has(name)) {
        if (name === 'list' || name === 'help') opts[name] = true;
        else opts[name] = inline ?? argv[++i] ?? '';
      } else {
        const next = argv[i + 1];
        // A value follows unless the next word is another flag (a boolean flag alone).
        const value = inline ?? (next !== undefined && !next.startsWith('--') ? argv[++i] : undefined);
        flags.push([name, value]);
      }
    } else positional.push(arg);
  }
  return { opts, positional, flags };
}

/** The params object from the JSON argument and the flags, checked against the method's fields. */
function buildParams(
  /** @type {Method | undefined} */ m,
  /** @type {string | undefined} */ jsonText,
  /** @type {[string, string | undefined][]} */ flags,
) {
  /** @type {any} */
  let params;
  if (jsonText !== undefined) {
    try {
      params = JSON.parse(jsonText);
    } catch {
      throw new UsageError(`params must be JSON, e.g. '{"amount":"0x64"}'`);
    }
  }
  if (flags.length === 0) return params;
  if (!m) throw new UsageError('param flags need a method of the OpenRPC document (strand rpc --list)');
  const { props } = paramProps(m);
  if (params !== undefined && (typeof params !== 'object' || Array.isArray(params) || params === null))
    throw new UsageError('param flags combine only with a JSON object argument');
  params = { ...(params ?? {}) };
  for (const [raw, text] of flags) {
    const negated = raw.startsWith('no_') && !(raw in props) && raw.slice(3) in props;
    const field = negated ? raw.slice(3) : raw;
    const flag = flagOf(raw);
    const schema = props[field];
    if (!schema) {
      const known = Object.keys(props).map(flagOf).join(' ') || 'none';
      throw new UsageError(`unknown param ${flag} for ${m.name} (its params: ${known})`);
    }
    if (negated) {
      if (!isBoolean(schema) || text !== undefined) throw new UsageError(`${flag}: not a boolean flag`);
      params[field] = false;
    } else if (text === undefined) {
      if (!isBoolean(schema)) throw new UsageError(`${flag} needs a value (${typeName(schema)})`);
      params[field] = true;
    } else params[field] = flagValue(flag, text, schema);
  }
  return params;
}

function nodeUrl(/** @type {Record<string, string | boolean>} */ opts) {
  if (opts.node) {
    const file = path.join(String(opts.dir || 'devnet-data'), 'devnet.json');
    if (!fs.existsSync(file))
      throw new UsageError(`${file} not found: start the network with 'strand devnet' (npm start) first`);
    /** @type {{ nodes: { name: string, rpc_url: string }[] }} */
    const desc = JSON.parse(fs.readFileSync(file, 'utf8'));
    const node = desc.nodes.find((n) => n.name === opts.node);
    if (!node) throw new UsageError(`no devnet node named '${opts.node}'`);
    return node.rpc_url;
  }
  return String(opts.url || process.env.STRAND_RPC_URL || 'http://127.0.0.1:8227');
}

/** One POST with node:http (lighter to load than fetch). */
function post(
  /** @type {string} */ url,
  /** @type {string} */ body,
  /** @type {string | undefined} */ token,
) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = (u.protocol === 'https:' ? https : http).request(
      u,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        timeout: 60_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode, text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 60 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/** JSON for a terminal: keys, strings and literals coloured; plain when piped. */
function show(/** @type {unknown} */ value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  if (!process.stdout.isTTY || process.env.NO_COLOR || typeof value === 'string') return `${text}\n`;
  return `${text.replace(
    /("(?:[^"\\]|\\.)*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?)/g,
    (m, str, colon, lit, num) =>
      str
        ? colon
          ? `\x1b[36m${str}\x1b[0m${colon}`
          : `\x1b[32m${str}\x1b[0m`
        : lit
          ? `\x1b[35m${lit}\x1b[0m`
          : num
            ? `\x1b[33m${num}\x1b[0m`
            : m,
  )}\n`;
}

export function completionScript(/** @type {'bash' | 'zsh'} */ shell, /** @type {Method[]} */ methods) {
  const cases = methods
    .map((m) => {
      const flags = Object.keys(paramProps(m).props).map(flagOf).join(' ');
      return `    ${m.name}) flags="${flags}" ;;`;
    })
    .join('\n');
  const bash = `# strand rpc completion (${shell}). Load with: source <(strand rpc completion ${shell})
_strand_rpc() {
  local cur=\${COMP_WORDS[COMP_CWORD]} method="" i flags=""
  [[ \${COMP_WORDS[1]} == rpc ]] || return 0
  for ((i = 2; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in
      --url|--node|-d|--dir|--token|--get) ((i++)) ;;
      -*) ;;
      *) [[ -z $method ]] && method=\${COMP_WORDS[i]} ;;
    esac
  done
  if [[ -z $method ]]; then
    COMPREPLY=($(compgen -W "${methods.map((m) => m.name).join(' ')} completion --list --url --node --dir --token --get --help" -- "$cur"))
    return 0
  fi
  case $method in
${cases}
    completion) flags="bash zsh" ;;
  esac
  COMPREPLY=($(compgen -W "$flags --help --get" -- "$cur"))
}
complete -F _strand_rpc strand
`;
  return shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${bash}` : bash;
}

/** `strand rpc …`: returns the exit code. */
export async function rpcCommand(/** @type {string[]} */ argv) {
  try {
    const { opts, positional, flags } = parseArgs(argv);
    const [method, jsonText, extra] = positional;
    if (method === 'completion') {
      if (jsonText !== 'bash' && jsonText !== 'zsh')
        throw new UsageError('usage: strand rpc completion bash|zsh');
      process.stdout.write(completionScript(jsonText, readDocument().methods));
      return 0;
    }
    if (opts.list) {
      process.stdout.write(list(readDocument().methods));
      return 0;
    }
    if (!method) {
      process.stdout.write(USAGE);
      return opts.help ? 0 : 2;
    }
    if (extra !== undefined)
      throw new UsageError(`unexpected argument '${extra}' (params are one JSON object)`);
    // A plain call needs no document: without one, only flag-style params and --help are lost.
    const m =
      opts.help || flags.length > 0 ? readDocument().methods.find((x) => x.name === method) : undefined;
    if (opts.help) {
      if (!m) throw new UsageError(`${method} is not in the OpenRPC document (strand rpc --list)`);
      process.stdout.write(help(m));
      return 0;
    }
    const params = buildParams(m, jsonText, flags);
    const url = nodeUrl(opts);
    const paramsList = params === undefined ? [] : Array.isArray(params) ? params : [params];
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: paramsList });
    const token = String(opts.token || process.env.STRAND_RPC_TOKEN || '') || undefined;
    /** @type {{ status?: number, text: string }} */
    let res;
    try {
      res = /** @type {any} */ (await post(url, body, token));
    } catch (e) {
      process.stderr.write(`strand: cannot reach ${url}: ${/** @type {Error} */ (e).message}\n`);
      return 1;
    }
    /** @type {{ result?: unknown, error?: { code: number, message: string, data?: unknown } }} */
    let reply;
    try {
      reply = JSON.parse(res.text);
    } catch {
      process.stderr.write(`strand: HTTP ${res.status}: ${res.text.slice(0, 200)}\n`);
      return 1;
    }
    if (reply.error) {
      const { code, message, data } = reply.error;
      process.stderr.write(`${JSON.stringify({ code, message, data }, null, 2)}\n`);
      return 1;
    }
    if (opts.get) {
      /** @type {any} */
      let v = reply.result;
      for (const k of String(opts.get).split('.')) v = v && typeof v === 'object' ? v[k] : undefined;
      if (v === undefined) throw new UsageError(`the result has no field ${opts.get}`);
      process.stdout.write(show(v));
      return 0;
    }
    process.stdout.write(show(reply.result));
    return 0;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`strand rpc: ${e.message}\n`);
    return 2;
  }
}

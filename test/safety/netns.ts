/**
 * A network namespace joined to the host by a veth pair, and a partition inside it made with
 * nftables: a process started in the namespace reaches the host's servers through the veth, until
 * `cut` drops its traffic to one port. Only private addresses (10.213.x.0/30), only inside a
 * namespace this file creates, removed by `remove`.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { CommandWrapper } from './fleet.js';

const run = promisify(execFile);

async function sh(command: string, ...args: string[]): Promise<string> {
  return (await run(command, args)).stdout;
}

/** Runs a command with `input` on its stdin. */
function shInput(input: string, command: string, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, (error) => (error === null ? resolve() : reject(error)));
    child.stdin?.end(input);
  });
}

/** Why namespaces cannot be used here, or null when they can. */
export async function partitionUnavailable(): Promise<string | null> {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'creating network namespaces needs root';
  for (const tool of ['ip', 'nft']) {
    try {
      await sh('sh', '-c', `command -v ${tool}`);
    } catch {
      return `'${tool}' is not installed (Debian: apt-get install ${tool === 'ip' ? 'iproute2' : 'nftables'})`;
    }
  }
  const probe = `plprobe${process.pid}`;
  try {
    await sh('ip', 'netns', 'add', probe);
    await sh('ip', 'netns', 'exec', probe, 'nft', 'list', 'ruleset');
  } catch (error) {
    return `this machine refuses network namespaces or nftables in them: ${String(error).split('\n')[0]}`;
  } finally {
    await sh('ip', 'netns', 'del', probe).catch(() => undefined);
  }
  return null;
}

export class Namespace {
  private constructor(
    readonly name: string,
    private readonly hostLink: string,
    /** The host's address on the veth: servers must listen on it. */
    readonly hostAddress: string,
    /** The namespace's own address. */
    readonly address: string,
  ) {}

  static async create(): Promise<Namespace> {
    const id = process.pid % 60_000;
    const octet = (process.pid % 250) + 1;
    const ns = new Namespace(`plsafe${id}`, `plh${id}`, `10.213.${octet}.1`, `10.213.${octet}.2`);
    const inner = `pln${id}`;
    try {
      await sh('ip', 'netns', 'add', ns.name);
      await sh('ip', 'link', 'add', ns.hostLink, 'type', 'veth', 'peer', 'name', inner);
      await sh('ip', 'link', 'set', inner, 'netns', ns.name);
      await sh('ip', 'addr', 'add', `${ns.hostAddress}/30`, 'dev', ns.hostLink);
      await sh('ip', 'link', 'set', ns.hostLink, 'up');
      await ns.exec('ip', 'addr', 'add', `${ns.address}/30`, 'dev', inner);
      await ns.exec('ip', 'link', 'set', inner, 'up');
      await ns.exec('ip', 'link', 'set', 'lo', 'up');
    } catch (error) {
      await ns.remove();
      throw error;
    }
    return ns;
  }

  exec(command: string, ...args: string[]): Promise<string> {
    return sh('ip', 'netns', 'exec', this.name, command, ...args);
  }

  /** Runs a command inside the namespace (for `Fleet`). */
  get wrapper(): CommandWrapper {
    return (command, args) => ({ command: 'ip', args: ['netns', 'exec', this.name, command, ...args] });
  }

  /** Drops every packet between the namespace and the host's `port`, both ways, without a reset. */
  async cut(port: number): Promise<void> {
    const rules = `table inet padlock_partition {
      chain output { type filter hook output priority 0; policy accept; ip daddr ${this.hostAddress} tcp dport ${port} counter drop; }
      chain input { type filter hook input priority 0; policy accept; ip saddr ${this.hostAddress} tcp sport ${port} counter drop; }
    }`;
    await shInput(rules, 'ip', 'netns', 'exec', this.name, 'nft', '-f', '-');
  }

  /** Packets the partition dropped so far. */
  async dropped(): Promise<number> {
    const listing = await this.exec('nft', 'list', 'table', 'inet', 'padlock_partition');
    return [...listing.matchAll(/packets (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  }

  async heal(): Promise<void> {
    await this.exec('nft', 'delete', 'table', 'inet', 'padlock_partition').catch(() => undefined);
  }

  /** Deletes the namespace (and with it the veth pair and the rules). */
  async remove(): Promise<void> {
    await sh('ip', 'netns', 'del', this.name).catch(() => undefined);
    await sh('ip', 'link', 'del', this.hostLink).catch(() => undefined);
  }
}

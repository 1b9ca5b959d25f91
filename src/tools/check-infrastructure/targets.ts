/**
 * What `check_infrastructure` may check, and the targets a call names. Network targets are confined like files:
 * the operator lists the hosts a check may reach (`serve --check-target PATTERN`, repeatable), and a target whose
 * host matches none is refused before anything is sent. Files are confined by the roots and denied paths.
 *
 * A pattern is a host name (`db.internal`), a wildcard over the leading labels (`*.example.com`: any subdomain,
 * not the domain itself), `*` (any host: an explicit opt-in), an IP address (`127.0.0.1`, `[::1]`) or an IPv4/IPv6
 * CIDR range (`10.0.0.0/8`), each optionally with `:port` (default: any port). A name is matched as a name; an IP
 * range also allows a name whose addresses all lie in it, and the check then connects to the address that was
 * vetted (so a DNS answer that changes in between cannot lead elsewhere).
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** One allowed host pattern, parsed. */
interface HostPattern {
  text: string;
  port: number | null;
  /** Lower-case name, `*.suffix` wildcard or `*`; `null` for an address range. */
  name: string | null;
  range: BlockList | null;
}

/** A target's host after the policy allowed it: connect to `address` when set (a vetted DNS answer). */
export interface AllowedHost {
  host: string;
  address: string | null;
}

const PORT = /^(.*):(\d{1,5}|\*)$/;

/** Parses `--check-target` patterns. @throws RangeError with the offending pattern. */
export function parseHostPatterns(patterns: readonly string[]): HostPattern[] {
  return patterns.map((raw) => {
    const text = raw.trim();
    let host = text;
    let port: number | null = null;
    // `[::1]:8443`, `host:443`, but not the colons of a bare IPv6 address.
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}|\*))?$/.exec(host);
    if (bracketed) {
      host = bracketed[1] as string;
      port = bracketed[2] === undefined || bracketed[2] === '*' ? null : Number(bracketed[2]);
    } else if (isIP(host.split('/')[0] as string) !== 6) {
      const m = PORT.exec(host);
      if (m) {
        host = m[1] as string;
        port = m[2] === '*' ? null : Number(m[2]);
      }
    }
    if (port !== null && (port < 1 || port > 65535)) throw new RangeError(`--check-target ${raw}: port out of range`);
    const [address, bits] = host.split('/');
    const family = isIP(address as string);
    if (family !== 0) {
      const range = new BlockList();
      const type = family === 4 ? 'ipv4' : 'ipv6';
      const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) throw new RangeError(`--check-target ${raw}: bad prefix length`);
      range.addSubnet(address as string, prefix, type);
      return { text, port, name: null, range };
    }
    if (bits !== undefined || !isHostPattern(host)) {
      throw new RangeError(`--check-target ${raw}: not a host name, *.domain, *, IP address or CIDR range`);
    }
    return { text, port, name: host.toLowerCase(), range: null };
  });
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/** `*`, or a DNS name whose first label may be `*`. */
function isHostPattern(host: string): boolean {
  if (host === '*') return true;
  const labels = host.split('.');
  return labels.every((label, i) => LABEL.test(label) || (i === 0 && label === '*' && labels.length > 1));
}

function nameMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

function inRange(range: BlockList, address: string): boolean {
  return range.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** The hosts check_infrastructure may reach. */
export class TargetPolicy {
  private readonly patterns: HostPattern[];

  /** @throws RangeError for a pattern that does not parse. */
  constructor(patterns: readonly string[]) {
    this.patterns = parseHostPatterns(patterns);
  }

  /** The patterns as given, for messages. */
  get described(): string[] {
    return this.patterns.map((pattern) => pattern.text);
  }

  /** Whether some pattern could allow `host:port` by name or address alone (no DNS), for preflight. */
  allowsLexically(host: string, port: number): boolean {
    const name = host.toLowerCase();
    const family = isIP(name);
    return this.patterns.some((p) => {
      if (p.port !== null && p.port !== port) return false;
      if (p.range) return family === 0 || inRange(p.range, name);
      return family === 0 && p.name !== null && nameMatches(p.name, name);
    });
  }

  /**
   * Whether `host:port` may be checked, and where to connect.
   *
   * @returns the host and the vetted address to connect to (`null`: connect by name), or `null` when refused.
   */
  async allow(host: string, port: number): Promise<AllowedHost | null> {
    const name = host.toLowerCase();
    const family = isIP(name);
    const ports = this.patterns.filter((p) => p.port === null || p.port === port);
    if (family !== 0) return ports.some((p) => p.range && inRange(p.range, name)) ? { host, address: name } : null;
    if (ports.some((p) => p.name !== null && nameMatches(p.name, name))) return { host, address: null };
    const ranges = ports.filter((p) => p.range);
    if (ranges.length === 0) return null;
    const addresses = await lookup(name, { all: true }).catch(() => []);
    if (addresses.length === 0) return null;
    const vetted = addresses.every((a) => ranges.some((p) => inRange(p.range as BlockList, a.address)));
    return vetted ? { host, address: (addresses[0] as { address: string }).address } : null;
  }
}

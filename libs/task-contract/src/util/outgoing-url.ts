import { LookupAddress, LookupOptions, lookup as dnsLookupCallback } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { domainToASCII, domainToUnicode } from 'node:url';

/** Address ranges no outgoing call may reach unless allowed: where a request can hurt the host. */
const INTERNAL: [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['224.0.0.0', 3, 'ipv4', 'multicast or reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  // IPv6 forms that carry an IPv4 address inside (::a9fe:a9fe is 169.254.169.254).
  ['::', 96, 'ipv6', 'IPv4-compatible'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64 (carries an IPv4 address)'],
  ['64:ff9b:1::', 48, 'ipv6', 'NAT64 (carries an IPv4 address)'],
  ['2002::', 16, 'ipv6', '6to4 (carries an IPv4 address)'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private (unique local)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

/** Names of this host: loopback, allowed or refused with it. */
const LOOPBACK_NAME = /(^|\.)localhost$/i;
/** Cloud metadata services by name: never called. */
const METADATA_NAME =
  /^(metadata\.google\.internal|metadata\.internal|instance-data(\.ec2\.internal)?)$/i;
/** Names that only mean something inside a private network. */
const INTERNAL_NAME = /(^|\.)(internal|local|localdomain|lan|home\.arpa)$/i;
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i;

/**
 * Why a host name (as the URL parser left it, trailing dot removed) is not one a public DNS name
 * can be, or undefined: an empty label (`127.0.0.1..`), a label of more than 63 characters or
 * one that begins or ends with `-`, a name past 253 characters, or an `xn--` label that is not
 * the punycode of a non-ASCII label (`xn--localhost-` reads as `localhost` to some decoders). A
 * numeric last label (`1.2.3.300`) never gets here: the URL parser refuses it as an address.
 */
export function malformedHostName(host: string): string | undefined {
  if (host.length > 253) return 'longer than 253 characters';
  const labels = host.split('.');
  for (const label of labels) {
    if (!LABEL.test(label)) return label === '' ? 'an empty label' : `a malformed label (${label})`;
    if (/^xn--/i.test(label)) {
      const unicode = domainToUnicode(label);
      if (
        !unicode ||
        !/[^\x20-\x7e]/.test(unicode) ||
        domainToASCII(unicode) !== label.toLowerCase()
      )
        return `a label that is not valid punycode (${label})`;
    }
  }
  return undefined;
}

function mappedIpv4(ip: string): string | undefined {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (dotted) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!hex) return undefined;
  const [hi, lo] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** What an internal address is, or undefined for a public one. */
export function internalRange(ip: string): string | undefined {
  const family = isIP(ip);
  if (family === 0) return undefined;
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1, or ::ffff:7f00:1) is that IPv4 address.
  const mapped = family === 6 ? mappedIpv4(ip) : undefined;
  const [address, type] = mapped ? [mapped, 'ipv4' as const] : [ip, family === 4 ? 'ipv4' : 'ipv6'];
  for (const [net, prefix, kind, name] of INTERNAL) {
    if (kind !== type) continue;
    const one = new BlockList();
    one.addSubnet(net, prefix, kind);
    if (one.check(address, type)) return name;
  }
  return undefined;
}

/** Networks an operator allows outgoing calls into (`10.1.0.0/16,127.0.0.1/32,::1/128`). */
export class AllowedNetworks {
  private readonly list = new BlockList();
  readonly text: string;

  constructor(cidrs: readonly string[]) {
    this.text = cidrs.join(',');
    for (const cidr of cidrs) {
      const [net, bits] = cidr.split('/');
      const family = isIP(net);
      const prefix = Number(bits ?? (family === 6 ? 128 : 32));
      if (
        family === 0 ||
        !Number.isInteger(prefix) ||
        prefix < 0 ||
        prefix > (family === 6 ? 128 : 32)
      )
        throw new Error(
          `${cidr} is not a network: write it as address/prefix (10.0.0.0/8, ::1/128)`,
        );
      this.list.addSubnet(net, prefix, family === 6 ? 'ipv6' : 'ipv4');
    }
  }

  static parse(text: string | undefined): AllowedNetworks {
    return new AllowedNetworks(
      (text ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  }

  has(ip: string): boolean {
    const family = isIP(ip);
    return family !== 0 && this.list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/**
 * Why a URL Baton would call (a worker, a task's `callback_url`) is refused, or undefined: not
 * http(s), credentials in it, a host that is an internal address (loopback, private, link-local
 * such as 169.254.169.254, written in any form the URL parser understands: `0x7f000001`,
 * `[::ffff:127.0.0.1]`) outside `allowed`, `localhost` unless loopback is allowed, a cloud
 * metadata service's name, or (with `internalNames: 'refuse'`, for URLs API callers give) a name
 * that only resolves inside a private network: `*.internal`, `*.local`, a single label such as
 * `metadata` (completed by the host's DNS search domains), or a malformed name. A name is checked
 * as written; the addresses it resolves to are the caller's to check when it connects. `setting`
 * names where an operator allows what is refused, for the message.
 */
export function outgoingUrlProblem(
  raw: string,
  allowed: AllowedNetworks,
  internalNames: 'refuse' | 'accept' = 'refuse',
  setting = "the scheduler's settings",
): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be http or https';
  if (url.username || url.password) return 'must not carry credentials (user:password@)';
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const address = isIP(host) ? host : LOOPBACK_NAME.test(host) ? '127.0.0.1' : undefined;
  if (address) {
    const range = internalRange(address);
    if (range && !allowed.has(address))
      return `points at a ${range} address (${host}); allow its network in ${setting} if it is meant`;
    return undefined;
  }
  if (METADATA_NAME.test(host)) return `names a cloud metadata service (${host})`;
  if (internalNames === 'accept') return undefined;
  if (INTERNAL_NAME.test(host))
    return `names an internal host (${host}); allow it in ${setting} if it is meant`;
  if (!host.includes('.'))
    return `names a single-label host (${host}), which only the network's own DNS search domains complete; allow it in ${setting} if it is meant`;
  const malformed = malformedHostName(host);
  if (malformed) return `has a malformed host name (${host}): ${malformed}`;
  return undefined;
}

/** Where an outgoing call may go: internal networks and host names an operator allowed. */
export interface OutgoingAllowList {
  networks: AllowedNetworks;
  /** Host names (lower case) allowed whatever they resolve to. */
  hosts: ReadonlySet<string>;
}

type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;

const lookupAll: LookupAll = (host) => dnsLookup(host, { all: true, verbatim: true });

/** The URL's host as compared with the allow-list: lower case, no brackets, no trailing dot. */
const hostOf = (url: URL): string =>
  url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();

/**
 * `outgoingUrlProblem`, then the addresses the host resolves to now: one internal address outside
 * the allow-list refuses the URL (a name pointing at 127.0.0.1 is loopback). An allowed host name
 * passes as it is. A name that does not resolve now passes: the check at connect time stands.
 */
export async function resolvedUrlProblem(
  raw: string,
  allow: OutgoingAllowList,
  lookup: LookupAll = lookupAll,
): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  const host = hostOf(url);
  if (allow.hosts.has(host)) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be http or https';
    if (url.username || url.password) return 'must not carry credentials (user:password@)';
    return undefined;
  }
  const problem = outgoingUrlProblem(raw, allow.networks, 'refuse', 'BATON_WEBHOOK_ALLOW');
  if (problem || isIP(host) || LOOPBACK_NAME.test(host)) return problem;
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host);
  } catch {
    // Not resolvable now (no such name, or DNS down): nothing to refuse yet. Each connection
    // checks the address it resolves to then (guardedLookup).
    return undefined;
  }
  for (const { address } of addresses) {
    const range = internalRange(address);
    if (range && !allow.networks.has(address))
      return `resolves to a ${range} address (${host} is ${address}); allow it in BATON_WEBHOOK_ALLOW if it is meant`;
  }
  return undefined;
}

/** A refused connection: the address a name resolved to is internal and not allowed. */
export class OutgoingAddressError extends Error {
  readonly code = 'EOUTGOINGREFUSED';
}

/**
 * A `lookup` for `net.connect` (undici's `connect.lookup`) that refuses internal addresses outside
 * the allow-list, checked on the very address the socket then connects to: a name that resolved
 * to a public address when the URL was saved and to 127.0.0.1 now is refused now (no DNS
 * rebinding). Allowed host names resolve as usual.
 */
export function guardedLookup(
  allow: OutgoingAllowList,
  resolve: typeof dnsLookupCallback = dnsLookupCallback,
): (hostname: string, options: LookupOptions, callback: LookupCallback) => void {
  return (hostname, options, callback) => {
    const host = hostname.replace(/\.$/, '').toLowerCase();
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      if (!allow.hosts.has(host)) {
        for (const a of list) {
          const range = internalRange(a.address);
          if (range && !allow.networks.has(a.address))
            return callback(
              new OutgoingAddressError(
                `${hostname} resolves to a ${range} address (${a.address}): refused; allow it in BATON_WEBHOOK_ALLOW if it is meant`,
              ),
              '',
              0,
            );
        }
      }
      if (list.length === 0) return callback(new Error(`${hostname} has no address`), '', 0);
      if (options.all) return (callback as unknown as LookupAllCallback)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}

type LookupCallback = (err: Error | null, address: string, family: number) => void;
type LookupAllCallback = (err: Error | null, addresses: LookupAddress[]) => void;

import { createServer, Server } from 'node:http';
import { AddressInfo, LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { JsonHttp } from '../client/json-http';
import { AllowedNetworks, guardedLookup } from './outgoing-url';

/**
 * The check at connect time: a name that resolved to a public address when its URL was saved
 * and resolves to loopback now (DNS rebinding) is refused on the very connection, and the server
 * at that address is never reached. The resolver is a stand-in for DNS; the sockets are real.
 */
describe('guardedLookup', () => {
  let server: Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  /** A resolver that answers `address` for every name (and counts the questions). */
  const rebound = (address: string) => {
    const asked: string[] = [];
    const resolve = ((host: string, _o: unknown, cb: (...a: unknown[]) => void) => {
      asked.push(host);
      cb(null, [{ address, family: 4 }]);
    }) as unknown as Parameters<typeof guardedLookup>[1];
    return { asked, resolve };
  };

  const post = async (agent: Agent): Promise<number | string> => {
    try {
      const res = await request(`http://hooks.example.test:${port}/x`, {
        method: 'POST',
        body: '{}',
        dispatcher: agent,
      });
      await res.body.text();
      return res.statusCode;
    } catch (err) {
      const e = err as { code?: string; cause?: { code?: string } };
      return e.code ?? e.cause?.code ?? String(err);
    } finally {
      await agent.close();
    }
  };

  it('refuses a name that resolves to loopback now, before connecting', async () => {
    const dns = rebound('127.0.0.1');
    const allow = { networks: AllowedNetworks.parse(''), hosts: new Set<string>() };
    const agent = new Agent({ connect: { lookup: guardedLookup(allow, dns.resolve) } });
    const before = hits;
    expect(await post(agent)).toBe('EOUTGOINGREFUSED');
    expect(dns.asked).toEqual(['hooks.example.test']);
    expect(hits).toBe(before);
  });

  it('connects to the checked address when its network or its name is allowed', async () => {
    for (const allow of [
      { networks: AllowedNetworks.parse('127.0.0.1/32'), hosts: new Set<string>() },
      { networks: AllowedNetworks.parse(''), hosts: new Set(['hooks.example.test']) },
    ]) {
      const dns = rebound('127.0.0.1');
      const agent = new Agent({ connect: { lookup: guardedLookup(allow, dns.resolve) } });
      const before = hits;
      expect(await post(agent)).toBe(200);
      expect(hits).toBe(before + 1);
    }
  });
});

describe('worker calls through a guarded lookup', () => {
  it('refuses a worker name that resolves outside the worker networks, before connecting', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end('{"code":0,"message":"ok","data":{}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    const toLoopback = ((_h: string, _o: unknown, cb: (...a: unknown[]) => void) =>
      cb(null, [{ address: '127.0.0.1', family: 4 }])) as unknown as Parameters<
      typeof guardedLookup
    >[1];
    const call = async (networks: string): Promise<string> => {
      const http = new JsonHttp({
        auth: { mode: 'token', token: 't' },
        lookup: guardedLookup(
          { networks: AllowedNetworks.parse(networks), hosts: new Set<string>() },
          toLoopback,
        ) as unknown as LookupFunction,
      });
      try {
        await http.call('GET', `http://worker.example.test:${port}`, '/health', {}, undefined, {
          fence: 0,
        });
        return 'answered';
      } catch (err) {
        return (err as Error).message;
      } finally {
        await http.close();
      }
    };
    try {
      expect(await call('10.0.0.0/8')).toMatch(/refused/);
      expect(hits).toBe(0);
      expect(await call('127.0.0.0/8')).toBe('answered');
      expect(hits).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

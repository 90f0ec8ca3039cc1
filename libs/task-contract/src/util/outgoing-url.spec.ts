import {
  AllowedNetworks,
  internalRange,
  outgoingUrlProblem,
  resolvedUrlProblem,
} from './outgoing-url';

const none = AllowedNetworks.parse('');

describe('outgoingUrlProblem', () => {
  it('refuses every internal address the probe stored, in whatever form it was written', () => {
    const refused = [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://127.0.0.1:3306/',
      'http://127.0.0.1:6379/',
      'http://[::1]/',
      'http://0x7f000001/',
      'http://2130706433/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::169.254.169.254]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[2002:a9fe:a9fe::1]/',
      'http://0.0.0.0/',
      'http://10.0.0.5/',
      'http://192.168.1.10/',
      'http://172.20.0.1/',
      'http://localhost:8080/',
      'http://db.localhost/',
      'http://user:pass@example.com/',
      'ftp://example.com/',
      'file:///etc/passwd',
      'not a url',
    ];
    for (const url of refused)
      expect({ url, problem: outgoingUrlProblem(url, none) }).toEqual({
        url,
        problem: expect.any(String),
      });
  });

  it('passes public addresses and names, and internal ones in an allowed network', () => {
    expect(outgoingUrlProblem('https://hooks.example.com/baton', none)).toBeUndefined();
    expect(outgoingUrlProblem('http://93.184.216.34/', none)).toBeUndefined();
    const loopback = AllowedNetworks.parse('127.0.0.0/8, ::1/128, 10.1.0.0/16');
    expect(outgoingUrlProblem('http://127.0.0.1:9000/', loopback)).toBeUndefined();
    expect(outgoingUrlProblem('http://[::1]:9000/', loopback)).toBeUndefined();
    expect(outgoingUrlProblem('http://10.1.2.3/', loopback)).toBeUndefined();
    expect(outgoingUrlProblem('http://10.2.0.1/', loopback)).toMatch(/private/);
    expect(outgoingUrlProblem('http://169.254.169.254/', loopback)).toMatch(/link-local/);
    // localhost is loopback; cluster names pass where names are accepted (workers), never metadata.
    expect(outgoingUrlProblem('http://localhost:9000/', loopback)).toBeUndefined();
    const svc = 'http://worker.default.svc.cluster.local:8080/';
    expect(outgoingUrlProblem(svc, none)).toMatch(/internal host/);
    expect(outgoingUrlProblem(svc, none, 'accept')).toBeUndefined();
    expect(outgoingUrlProblem('http://metadata.google.internal/', loopback, 'accept')).toMatch(
      /metadata/,
    );
  });

  it('refuses single-label and malformed names where names are refused, saying where to allow them', () => {
    const refused: [string, RegExp][] = [
      ['http://metadata/', /single-label host \(metadata\)/],
      ['http://intranet:8080/hook', /single-label host/],
      ['http://127.0.0.1../', /empty label/],
      ['http://a..example.com/', /empty label/],
      ['http://-a.example.com/', /malformed label \(-a\)/],
      ['http://a-.example.com/', /malformed label/],
      [`http://${'a'.repeat(64)}.example.com/`, /malformed label/],
      [`http://${'abcdefghi.'.repeat(26)}com/`, /malformed host name .*longer than 253/],
      ['http://xn--localhost-/', /single-label/],
      ['http://xn--localhost-.example.com/', /malformed host name .*\(xn--localhost-\)/],
      ['http://1.2.3.300/', /not a URL/],
      ['http://hooks.example.123/', /not a URL/],
    ];
    for (const [url, why] of refused) {
      const problem = outgoingUrlProblem(url, none, 'refuse', 'BATON_WEBHOOK_ALLOW');
      expect({ url, problem }).toEqual({ url, problem: expect.stringMatching(why) });
    }
    expect(outgoingUrlProblem('http://metadata/', none, 'refuse', 'BATON_WEBHOOK_ALLOW')).toMatch(
      /allow it in BATON_WEBHOOK_ALLOW/,
    );
    // Real names pass: IDN punycode, digits inside labels, underscores (service records).
    for (const url of [
      'https://xn--bcher-kva.example/hook',
      'https://hooks-2.eu-west-1.example.com/x',
      'https://_hooks.example.com/',
      'https://hooks.example.com./',
    ])
      expect({ url, problem: outgoingUrlProblem(url, none) }).toEqual({ url, problem: undefined });
    // Workers register under cluster service names: a single label is accepted there.
    expect(outgoingUrlProblem('http://worker:8080/', none, 'accept')).toBeUndefined();
  });

  it('names the range, and refuses a malformed allow-list at once', () => {
    expect(internalRange('169.254.169.254')).toMatch(/metadata/);
    expect(internalRange('::ffff:7f00:1')).toBe('loopback');
    expect(internalRange('8.8.8.8')).toBeUndefined();
    expect(() => AllowedNetworks.parse('10.0.0.0/33')).toThrow(/not a network/);
    expect(() => AllowedNetworks.parse('example.com')).toThrow(/not a network/);
  });
});

describe('resolvedUrlProblem', () => {
  const allow = { networks: AllowedNetworks.parse(''), hosts: new Set<string>() };
  const resolvesTo =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it('refuses a name that resolves to an internal address, any one of them', async () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '::1', 'fd00::1']) {
      const problem = await resolvedUrlProblem(
        'https://hooks.example.com/x',
        allow,
        resolvesTo('93.184.216.34', address),
      );
      expect({ address, problem }).toEqual({ address, problem: expect.stringContaining(address) });
    }
  });

  it('passes public addresses, allowed networks and hosts, and names that do not resolve now', async () => {
    expect(
      await resolvedUrlProblem('https://hooks.example.com/x', allow, resolvesTo('93.184.216.34')),
    ).toBeUndefined();
    const net = { networks: AllowedNetworks.parse('10.0.0.0/8'), hosts: new Set<string>() };
    expect(
      await resolvedUrlProblem('https://hooks.example.com/x', net, resolvesTo('10.1.2.3')),
    ).toBeUndefined();
    const host = { networks: AllowedNetworks.parse(''), hosts: new Set(['hooks.corp']) };
    expect(
      await resolvedUrlProblem('http://hooks.corp:8080/x', host, resolvesTo('127.0.0.1')),
    ).toBeUndefined();
    expect(await resolvedUrlProblem('gopher://hooks.corp/x', host)).toMatch(/http or https/);
    const nx = async (): Promise<never> => {
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    expect(await resolvedUrlProblem('https://nowhere.example/x', allow, nx)).toBeUndefined();
    // Literal addresses and schemes are still refused without a lookup.
    expect(await resolvedUrlProblem('http://127.0.0.1/x', allow, nx)).toMatch(/loopback/);
    expect(await resolvedUrlProblem('file:///etc/passwd', allow, nx)).toMatch(/http or https/);
  });
});

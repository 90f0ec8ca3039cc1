import { request as httpRequest } from 'node:http';

/**
 * A GET of `path` on `base` (an http URL) byte for byte, as `curl --path-as-is` sends it: no
 * client-side URL parsing resolves its dot segments or re-encodes it on the way.
 */
export function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

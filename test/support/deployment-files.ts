import { readFileSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ROOT } from './processes';

/** A parsed YAML or JSON document: the tests walk it as the files write it. */
export type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const K8S = join(ROOT, 'docker', 'k8s');
export const OVERLAY = join(K8S, 'overlays', 'example');
export const ALERTS = join(ROOT, 'docker', 'prometheus', 'alerts.yml');

/** The files under `dir` whose name matches `name`, at any depth. */
export function files(dir: string, name: RegExp): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? files(path, name) : name.test(entry) ? [path] : [];
  });
}

export const readYaml = (file: string): Doc => parse(readFileSync(file, 'utf8')) as Doc;

/** Every document of every YAML file under docker/k8s; a file that does not parse throws. */
export function manifests(): Doc[] {
  return files(K8S, /\.ya?ml$/).flatMap((file) =>
    parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
      if (d.errors.length) throw new Error(`${relative(ROOT, file)}: ${d.errors[0].message}`);
      return d.toJS() as Doc;
    }),
  );
}

export const kinds = (kind: string): Doc[] => manifests().filter((d) => d?.kind === kind);

export const alertRules = (): Doc[] => readYaml(ALERTS).groups.flatMap((g: Doc) => g.rules);
export const scaledObject = (): Doc => readYaml(join(OVERLAY, 'worker-scaledobject.yaml'));
export const kedaQuery = (): string => scaledObject().spec.triggers[0].metadata.query;
export const dashboard = (): Doc =>
  JSON.parse(readFileSync(join(ROOT, 'docker', 'grafana', 'baton-dashboard.json'), 'utf8'));

/** Every PromQL expression of the deployment files, with where it stands. */
export function expressions(): { where: string; expr: string }[] {
  const dash = dashboard();
  const panels: Doc[] = dash.panels.flatMap((p: Doc) => [p, ...(p.panels ?? [])]);
  return [
    ...alertRules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr as string })),
    { where: 'the KEDA query', expr: kedaQuery() },
    ...panels.flatMap((p) =>
      (p.targets ?? []).map((t: Doc) => ({ where: `panel "${p.title}"`, expr: t.expr as string })),
    ),
    ...dash.templating.list.map((v: Doc) => ({ where: `variable ${v.name}`, expr: v.definition })),
  ];
}

/** The keys of `KEY=value` lines (an env file, kustomize literals). */
export const keysOf = (lines: string[]): string[] =>
  lines.filter((l) => /^\w+=/.test(l)).map((l) => l.slice(0, l.indexOf('=')));

/**
 * The kubectl that renders the overlays: `KUBECTL`, else the one on PATH. It must carry kustomize
 * v4 or newer (kubectl 1.21+), the syntax the overlays are written in; Debian's own
 * `kubernetes-client` is 1.20 (kustomize v2) and cannot read them. Asked once per test file.
 */
let checked: string | undefined;
export function kubectl(): string {
  if (checked) return checked;
  const bin = process.env.KUBECTL ?? 'kubectl';
  const found = spawnSync(bin, ['version', '--client'], { encoding: 'utf8' });
  const version = /Kustomize Version: v(\d+)\.(\d+)/.exec(`${found.stdout ?? ''}`);
  if (found.error || !version || Number(version[1]) < 4)
    throw new Error(
      `no kubectl with kustomize v4+ to render docker/k8s (${bin}: ${
        found.error?.message ?? (`${found.stdout}${found.stderr}`.trim() || 'no answer')
      }). Install kubectl 1.21 or newer (this machine kind has it at /usr/bin/kubectl, from ` +
        'google-cloud-cli), or point KUBECTL at one',
    );
  return (checked = bin);
}

/** What `kubectl kustomize dir` renders, one document per object; a failed render throws. */
export function kustomize(dir: string): Doc[] {
  const out = spawnSync(kubectl(), ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  if (out.status !== 0)
    throw new Error(`kubectl kustomize ${relative(ROOT, dir)} failed:\n${out.stderr}`);
  return parseAllDocuments(out.stdout).map((d) => d.toJS() as Doc);
}

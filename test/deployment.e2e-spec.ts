import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { stringify } from 'yaml';
import { Api, Backend, productionBackend, startFleet, startTemplateWorker } from './support/baton';
import {
  ALERTS,
  Doc,
  K8S,
  OVERLAY,
  alertRules,
  expressions,
  files,
  keysOf,
  kedaQuery,
  kinds,
  kustomize,
  manifests,
  readYaml,
  scaledObject,
} from './support/deployment-files';
import { ROOT, RunningProcess, eventually } from './support/processes';
import {
  PROMTOOL,
  PromRule,
  RunningPrometheus,
  declaredFamilies,
  metricNames,
  requireTool,
  run,
  selectors,
} from './support/prometheus';

jest.setTimeout(300_000);

/**
 * docker/: the Kubernetes manifests hang together (kustomize references, probes, resources,
 * secrets and settings that exist), promtool accepts the alert rules, and every metric the
 * alerts, the KEDA query and the Grafana dashboard read is one Baton serves, which a real
 * Prometheus then evaluates against a running fleet.
 */
describe('deployment files', () => {
  it('parse, and every kustomization names only files that exist', () => {
    const all = manifests();
    expect(all.length).toBeGreaterThan(10);
    const kustomizations = files(K8S, /^kustomization\.ya?ml$/);
    expect(kustomizations.map((f) => relative(K8S, f)).sort()).toEqual([
      'base/kustomization.yaml',
      'overlays/example/kustomization.yaml',
    ]);
    const missing: string[] = [];
    for (const file of kustomizations) {
      const k = readYaml(file);
      const generators: Doc[] = [...(k.configMapGenerator ?? []), ...(k.secretGenerator ?? [])];
      const named: string[] = [
        ...(k.resources ?? []),
        ...(k.components ?? []),
        ...(k.patches ?? []).flatMap((p: Doc) => (p.path ? [p.path] : [])),
        ...generators.flatMap((g) => [...(g.envs ?? []), ...(g.files ?? [])]),
      ];
      for (const name of named) {
        // A file, or a directory that is itself a kustomization.
        const path = resolve(dirname(file), name);
        const dir = existsSync(path) && statSync(path).isDirectory();
        if (!existsSync(dir ? join(path, 'kustomization.yaml') : path))
          missing.push(`${relative(ROOT, file)}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('renders with `kubectl kustomize`: the overlay names, tags, counts and wires what the base holds', () => {
    const base = kustomize(join(K8S, 'base'));
    expect(base.filter((d) => d.metadata.namespace)).toEqual([]);
    const out = kustomize(OVERLAY);
    const count = (kind: string) => out.filter((d) => d.kind === kind).length;
    expect(
      Object.fromEntries(
        ['Deployment', 'Service', 'ConfigMap', 'Secret'].map((k) => [k, count(k)]),
      ),
    ).toEqual({ Deployment: 3, Service: 3, ConfigMap: 1, Secret: 1 });
    for (const kind of ['Namespace', 'Ingress', 'ScaledObject']) expect(count(kind)).toBe(1);
    expect(count('NetworkPolicy')).toBeGreaterThanOrEqual(2);
    // What the base holds is all there, each in the overlay's namespace.
    expect(out.length).toBe(base.length + 1 + count('Ingress') + count('NetworkPolicy') + 2);
    const overlay = readYaml(join(OVERLAY, 'kustomization.yaml'));
    for (const d of out.filter((d) => d.kind !== 'Namespace'))
      expect(`${d.kind}/${d.metadata.name} in ${d.metadata.namespace}`).toBe(
        `${d.kind}/${d.metadata.name} in ${overlay.namespace}`,
      );

    // The generators' names carry a hash (a change rolls the pods), and every reference follows it.
    const [config] = out.filter((d) => d.kind === 'ConfigMap');
    const [secret] = out.filter((d) => d.kind === 'Secret');
    expect(config.metadata.name).toMatch(/^baton-config-[a-z0-9]{6,}$/);
    expect(secret.metadata.name).toMatch(/^baton-secrets-[a-z0-9]{6,}$/);
    const envKeys = keysOf(readFileSync(join(K8S, 'base', 'config.env'), 'utf8').split('\n'));
    const merged = overlay.configMapGenerator[0].literals as string[];
    expect(Object.keys(config.data).sort()).toEqual(
      [...new Set([...envKeys, ...keysOf(merged)])].sort(),
    );
    for (const literal of merged) {
      const at = literal.indexOf('=');
      expect(config.data[literal.slice(0, at)]).toBe(literal.slice(at + 1));
    }
    expect(Object.keys(secret.data).sort()).toEqual(
      keysOf(overlay.secretGenerator[0].literals).sort(),
    );
    const deployments = out.filter((d) => d.kind === 'Deployment');
    const refs: string[] = [];
    const tags: string[] = [];
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        tags.push(c.image);
        for (const e of c.env ?? []) {
          const s = e.valueFrom?.secretKeyRef;
          const m = e.valueFrom?.configMapKeyRef;
          if (s) refs.push(s.name);
          if (m) refs.push(m.name);
        }
        for (const f of c.envFrom ?? []) refs.push(f.configMapRef?.name ?? f.secretRef?.name);
      }
    }
    expect(refs.length).toBeGreaterThan(3);
    expect([...new Set(refs)].sort()).toEqual([config.metadata.name, secret.metadata.name].sort());
    const wanted = new Map(overlay.images.map((i: Doc) => [i.name, `${i.name}:${i.newTag}`]));
    for (const image of tags) expect([...wanted.values()]).toContain(image);
    expect(new Set(tags).size).toBe(wanted.size);
    const replicas = Object.fromEntries(
      deployments.map((d) => [d.metadata.name, d.spec.replicas ?? 1]),
    );
    for (const r of overlay.replicas) expect(replicas[r.name]).toBe(r.count);

    // The Ingress reaches rendered Services, which select rendered pods on a port they open.
    const services = out.filter((d) => d.kind === 'Service');
    const [ingress] = out.filter((d) => d.kind === 'Ingress');
    for (const rule of ingress.spec.rules)
      for (const p of rule.http.paths) {
        const svc = services.find((s) => s.metadata.name === p.backend.service.name);
        expect(svc).toBeDefined();
        const pods = deployments.filter((d) =>
          Object.entries(svc!.spec.selector).every(
            ([k, v]) => d.spec.template.metadata.labels[k] === v,
          ),
        );
        expect(pods.map((d) => d.metadata.name)).toHaveLength(1);
      }
    const [scaled] = out.filter((d) => d.kind === 'ScaledObject');
    expect(replicas[scaled.spec.scaleTargetRef.name]).toBeDefined();
  });

  it('publishes the console and the API over TLS only, and lets in only who needs each pod', () => {
    const services = kinds('Service');
    const deployments = kinds('Deployment');
    const [ingress] = kinds('Ingress');
    const tlsHosts = ingress.spec.tls.flatMap((t: Doc) => t.hosts);
    const routes: string[] = [];
    for (const rule of ingress.spec.rules) {
      expect(tlsHosts).toContain(rule.host);
      for (const p of rule.http.paths) {
        const svc = services.find((s) => s.metadata.name === p.backend.service.name);
        const port = svc?.spec.ports.find((x: Doc) => x.name === p.backend.service.port.name);
        expect(`${rule.host}${p.path} -> ${port ? 'a port' : 'nothing'}`).toBe(
          `${rule.host}${p.path} -> a port`,
        );
        routes.push(`${rule.host}${p.path} ${svc!.metadata.name}`);
      }
    }
    // The scheduler's metrics and health are not published.
    expect(routes.sort()).toEqual([
      'api.baton.example.com/docs baton-scheduler',
      'api.baton.example.com/v1 baton-scheduler',
      'baton.example.com/ baton-console',
    ]);
    // Every policy selects pods that exist (or all), and lets in only ports those pods declare.
    const policies = kinds('NetworkPolicy');
    expect(policies.some((p) => Object.keys(p.spec.podSelector).length === 0)).toBe(true);
    const labelsMatch = (want: Doc, labels: Doc): boolean =>
      Object.entries(want).every(([k, v]) => labels[k] === v);
    const problems: string[] = [];
    for (const p of policies) {
      const want = p.spec.podSelector.matchLabels;
      if (!want) continue;
      const pods = deployments.filter((d) => labelsMatch(want, d.spec.template.metadata.labels));
      if (pods.length === 0) problems.push(`${p.metadata.name}: selects no pod`);
      const ports = pods.flatMap((d) =>
        d.spec.template.spec.containers.flatMap((c: Doc) =>
          c.ports.map((x: Doc) => x.containerPort),
        ),
      );
      for (const rule of p.spec.ingress ?? []) {
        for (const port of rule.ports ?? [])
          if (!ports.includes(port.port)) problems.push(`${p.metadata.name}: port ${port.port}`);
        for (const from of rule.from ?? []) {
          const peer = from.podSelector?.matchLabels;
          if (peer && !deployments.some((d) => labelsMatch(peer, d.spec.template.metadata.labels)))
            problems.push(`${p.metadata.name}: a peer that matches no pod`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('compose: every service restarts and says when it is ready, and none is there unused', () => {
    const services = readYaml(join(ROOT, 'docker', 'compose.yml')).services as Record<string, Doc>;
    const problems: string[] = [];
    for (const [name, s] of Object.entries(services)) {
      if (s.restart !== 'unless-stopped') problems.push(`${name}: restart is ${s.restart}`);
      if (!Array.isArray(s.healthcheck?.test)) problems.push(`${name}: no healthcheck`);
      // Every dependency waits for readiness (a started database may not take connections yet).
      const deps = (s.depends_on ?? {}) as Doc;
      if (!Array.isArray(deps))
        for (const [dep, how] of Object.entries(deps))
          if ((how as Doc).condition !== 'service_healthy')
            problems.push(`${name}: waits for ${dep} to start, not to be ready`);
    }
    // A service without published ports is a backend: some Baton service must be told its host.
    const settings = Object.values(services).flatMap((s) =>
      Object.values((s.environment ?? {}) as Doc).map(String),
    );
    for (const [name, s] of Object.entries(services))
      if (!s.ports && !settings.some((v) => v === name || v.startsWith(`${name}:`)))
        problems.push(`${name}: no service uses it`);
    expect(problems).toEqual([]);
  });

  it('gives every Deployment /health probes, resources and a non-root, read-only container', () => {
    const deployments = kinds('Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      'baton-console',
      'baton-scheduler',
      'baton-worker-template',
    ]);
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(d.spec.selector.matchLabels).toEqual(
        expect.objectContaining(d.spec.template.metadata.labels),
      );
      for (const c of pod.containers) {
        const where = `${d.metadata.name}/${c.name}`;
        for (const probe of ['livenessProbe', 'readinessProbe'])
          expect(`${where} ${probe} ${c[probe]?.httpGet?.path}`).toMatch(/ \/health(\/\w+)?$/);
        for (const side of ['requests', 'limits'])
          expect(`${where} ${side}: ${Object.keys(c.resources?.[side] ?? {}).sort()}`).toBe(
            `${where} ${side}: cpu,memory`,
          );
        expect(c.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
        });
      }
      // Init containers have no probes, and the same limits and hardening.
      for (const c of pod.initContainers ?? []) {
        const where = `${d.metadata.name}/${c.name}`;
        expect(`${where}: ${Object.keys(c.resources?.limits ?? {}).sort()}`).toBe(
          `${where}: cpu,memory`,
        );
        expect(c.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
        });
      }
    }
    // The ports the images expose (docker/*.Dockerfile) are the ports the pods declare.
    for (const [name, image] of [
      ['baton-scheduler', 'scheduler'],
      ['baton-console', 'console'],
      ['baton-worker-template', 'worker-template'],
    ]) {
      const dockerfile = readFileSync(join(ROOT, 'docker', `${image}.Dockerfile`), 'utf8');
      const exposed = Number(/^EXPOSE (\d+)$/m.exec(dockerfile)?.[1]);
      const c = deployments.find((d) => d.metadata.name === name)!.spec.template.spec.containers[0];
      expect(`${name} ${c.ports[0].containerPort}`).toBe(`${name} ${exposed}`);
      expect(c.image).toBe(`baton/${image}`);
    }
    const scheduler = deployments.find((d) => d.metadata.name === 'baton-scheduler')!;
    const c = scheduler.spec.template.spec.containers[0];
    expect([c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path]).toEqual([
      '/health/live',
      '/health/ready',
    ]);
    expect(c.env).toContainEqual({ name: 'BATON_DB_MIGRATE', value: 'false' });
    expect(scheduler.spec.template.metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '3000',
      'prometheus.io/path': '/metrics',
    });
    expect(
      kinds('PodDisruptionBudget')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['baton-scheduler', 'baton-worker-template']);
  });

  it("migrates in the scheduler pods' init step (`npm run migrate`, under the database's lock), and every reference resolves in the overlay", () => {
    // No Job: one with a fixed name would have to be deleted before every upgrade.
    expect(kinds('Job')).toEqual([]);
    const scheduler = kinds('Deployment').find((d) => d.metadata.name === 'baton-scheduler')!;
    const [migrate] = scheduler.spec.template.spec.initContainers;
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;
    expect(migrate.command.join(' ')).toBe(scripts.migrate);
    expect(migrate.image).toBe(scheduler.spec.template.spec.containers[0].image);
    expect(readFileSync(join(ROOT, 'apps/scheduler/src/migrate.ts'), 'utf8')).toContain(
      'runMigrationsLocked',
    );
    expect(existsSync(join(ROOT, 'apps/scheduler/src/migrate.ts'))).toBe(true);

    const base = readYaml(join(K8S, 'base', 'kustomization.yaml'));
    const overlay = readYaml(join(OVERLAY, 'kustomization.yaml'));
    const configKeys = keysOf(
      readFileSync(join(K8S, 'base', base.configMapGenerator[0].envs[0]), 'utf8').split('\n'),
    );
    const secret = overlay.secretGenerator.find((g: Doc) => g.name === 'baton-secrets');
    const secretKeys = keysOf(secret.literals);
    const pods = kinds('Deployment').map((d) => d.spec.template.spec);
    const unknown: string[] = [];
    for (const c of pods.flatMap((p) => [...p.containers, ...(p.initContainers ?? [])])) {
      for (const e of c.env ?? []) {
        const s = e.valueFrom?.secretKeyRef;
        if (s && !s.optional && (s.name !== 'baton-secrets' || !secretKeys.includes(s.key)))
          unknown.push(`${c.name}: secret ${s.name}/${s.key}`);
        const m = e.valueFrom?.configMapKeyRef;
        if (m && (m.name !== 'baton-config' || !configKeys.includes(m.key)))
          unknown.push(`${c.name}: config ${m.name}/${m.key}`);
      }
      for (const f of c.envFrom ?? [])
        if (f.configMapRef?.name !== 'baton-config') unknown.push(`${c.name}: envFrom`);
      if (!overlay.images.some((i: Doc) => i.name === c.image))
        unknown.push(`${c.name}: image ${c.image} has no tag in the overlay`);
    }
    expect(unknown).toEqual([]);
    // Placeholders, marked as such: the repository holds no secret.
    for (const literal of secret.literals) expect(literal).toMatch(/^\w+=PLACEHOLDER-/);

    const names = kinds('Deployment').map((d) => d.metadata.name);
    for (const r of overlay.replicas) expect(names).toContain(r.name);
    expect(overlay.replicas).toEqual(
      expect.arrayContaining([
        { name: 'baton-scheduler', count: 2 },
        { name: 'baton-worker-template', count: 2 },
      ]),
    );
    const scaled = scaledObject();
    expect(scaled.apiVersion).toBe('keda.sh/v1alpha1');
    expect(names).toContain(scaled.spec.scaleTargetRef.name);
    expect(scaled.spec.triggers[0].type).toBe('prometheus');
    // The query reads this overlay's namespace, and takes the max over instances before the sum.
    expect(kedaQuery()).toContain(`namespace="${overlay.namespace}"`);
    expect(kedaQuery().replace(/\s+/g, ' ')).toMatch(/^sum\(max by \(task_type, priority\)/);
  });

  it('passes promtool: the alert rules and the compose scrape config', async () => {
    requireTool(PROMTOOL);
    const rules = await run(PROMTOOL, ['check', 'rules', ALERTS]);
    expect(rules.out).toContain(`SUCCESS: ${alertRules().length} rules found`);
    expect(rules.code).toBe(0);
    const config = await run(PROMTOOL, ['check', 'config', 'docker/prometheus/prometheus.yml']);
    expect(config.out).toContain('SUCCESS');
    expect(config.code).toBe(0);
    // Debian's promtool is built without Kubernetes discovery: kubernetes.yml is read as YAML.
    const k8s = readYaml(join(ROOT, 'docker', 'prometheus', 'kubernetes.yml'));
    expect(k8s.rule_files).toEqual(['alerts.yml']);
    expect(k8s.scrape_configs.map((j: Doc) => j.job_name)).toEqual([
      'baton-scheduler',
      'baton-worker',
    ]);
    for (const rule of alertRules()) {
      expect(`${rule.alert} ${rule.for}`).toMatch(/ \d+[smh]$/);
      expect(rule.labels.severity).toMatch(/^(warning|critical)$/);
      expect(rule.annotations.summary && rule.annotations.description).toBeTruthy();
    }
  });

  it('finds the metric names of every expression (the extractor checked)', () => {
    const names = expressions().flatMap((e) => metricNames(e.expr));
    expect(names).toContain('up');
    expect(names).toContain('baton_task_backlog');
    for (const n of names) expect(n).toMatch(/^(up|baton_\w+|process_\w+)$/);
  });
});

/** Labels Prometheus itself adds to a target's series: not the app's to declare. */
const TARGET_LABELS = new Set(['job', 'instance', 'namespace', 'pod', 'le']);

/**
 * The files against a real fleet: two schedulers on MariaDB + Redis (the gauges read from the
 * database appear once per instance, which the queries must not add up), a template worker, and
 * a real Prometheus scraping them with alerts.yml loaded.
 */
describe('deployment files against a running Baton and Prometheus', () => {
  let backend: Backend;
  let urls: string[];
  let schedulers: RunningProcess[];
  let worker: RunningProcess | undefined;
  let prometheus: RunningPrometheus | undefined;
  let api: Api;
  let dir: string;
  const procs = new Set<RunningProcess>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-deploy-'));
    backend = await productionBackend();
    ({ schedulers, urls } = await startFleet(backend, 2, 'deploy', procs));
    worker = await startTemplateWorker('deploy-w1', urls.join(','), join(dir, 'runs.jsonl'));
    api = new Api(urls[0]);
    await api.waitForWorkers(1);
    // A few tasks run to their end first, so that the families of a run have series (half of
    // them take a lock key, for the lock metrics).
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        await api.create({
          create_info: { task_type: 'demo.echo', task_name: `deploy ${i}` },
          params: { n: i },
          ...(i % 2 === 0 ? { lock_keys: [`deploy-${i}`] } : {}),
        }),
      );
    for (const id of ids) expect((await api.until(id, 'FINISH', 60_000)).outcome).toBe('SUCCESS');
  });

  afterAll(async () => {
    await prometheus?.stop();
    await Promise.all([...procs, ...(worker ? [worker] : [])].map((p) => p.stop()));
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves every metric the alerts, the KEDA query and the dashboard read', async () => {
    const served = new Map([
      ...(await declaredFamilies(urls[0])),
      ...(await declaredFamilies(worker!.url)),
    ]);
    const missing: string[] = [];
    for (const { where, expr } of expressions()) {
      for (const name of metricNames(expr)) {
        const base = name.replace(/_(bucket|sum|count)$/, '');
        if (name !== 'up' && !served.has(name) && !served.has(base))
          missing.push(`${name} (${where})`);
      }
      // A label a selector names is one the family carries (when it has samples to tell).
      for (const s of selectors(expr)) {
        const labels = served.get(s.name) ?? served.get(s.name.replace(/_(bucket|sum|count)$/, ''));
        if (!labels?.size) continue;
        for (const l of s.labels)
          if (!TARGET_LABELS.has(l) && !labels.has(l)) missing.push(`${s.name}{${l}} (${where})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('loads the alerts into Prometheus, scales on the backlog of one instance, and fires', async () => {
    // alerts.yml as it is, and a copy whose rules fire as soon as they hold (`for: 0s`).
    const now = readYaml(ALERTS);
    now.groups = now.groups.map((g: Doc) => ({
      name: `${g.name}-now`,
      rules: g.rules.map((r: Doc) => ({ ...r, for: '0s' })),
    }));
    const nowFile = join(dir, 'alerts-now.yml');
    writeFileSync(nowFile, stringify(now));
    const target = (url: string): string => new URL(url).host;
    // The label Kubernetes discovery adds (docker/prometheus/kubernetes.yml): the overlay's.
    const labels = { namespace: readYaml(join(OVERLAY, 'kustomization.yaml')).namespace };
    prometheus = await RunningPrometheus.start(
      [
        { job: 'baton-scheduler', targets: urls.map(target), labels },
        { job: 'baton-worker', targets: [target(worker!.url)], labels },
      ],
      [ALERTS, nowFile],
    );
    const prom = prometheus;
    const rule = async (group: string, name: string): Promise<PromRule> => {
      const r = (await prom.rules()).get(group)?.find((x) => x.name === name);
      if (!r) throw new Error(`no rule ${name} in group ${group}`);
      return r;
    };
    const value = async (expr: string): Promise<number | undefined> => {
      const r = await prom.query(expr);
      return r.length === 1 ? Number(r[0].value[1]) : undefined;
    };

    await eventually(
      async () => ((await prom.query('baton_tasks')).length > 0 ? true : undefined),
      60_000,
      'Prometheus holding baton_tasks',
    );
    // Every rule of both groups evaluated without an error.
    const count = alertRules().length;
    await eventually(
      async () => {
        const g = await prom.rules();
        const all = [...(g.get('baton') ?? []), ...(g.get('baton-now') ?? [])];
        return all.length === 2 * count && all.every((r) => r.health === 'ok') ? true : undefined;
      },
      60_000,
      'every alert rule loaded and evaluated with health ok',
    );
    // A healthy, idle fleet raises nothing, even with no wait before firing (absent() holds only
    // until the first scrapes are in).
    await eventually(
      async () => {
        const now = (await prom.rules()).get('baton-now') ?? [];
        return now.every((r) => r.state === 'inactive') ? true : undefined;
      },
      60_000,
      'every rule inactive on a healthy fleet',
    );

    // No worker: new tasks wait, the worker turns stale.
    await worker!.kill9();
    worker = undefined;
    const N = 5;
    for (let i = 0; i < N; i++)
      await api.create({
        create_info: { task_type: 'demo.echo', task_name: `waiting ${i}`, important_level: 3 },
        params: { n: i },
      });
    const naive = 'sum(baton_task_backlog{task_type="demo.echo"})';
    await eventually(
      async () =>
        (await value(kedaQuery())) === N && (await value(naive)) === 2 * N ? true : undefined,
      90_000,
      `the KEDA query at ${N} while a plain sum over the two instances says ${2 * N}`,
    );
    await eventually(
      async () => {
        const r = await rule('baton-now', 'BatonWorkerUnhealthy');
        return r.state === 'firing' && r.alerts?.some((a) => a.labels.task_type === 'demo.echo')
          ? true
          : undefined;
      },
      90_000,
      'BatonWorkerUnhealthy firing for demo.echo',
    );
    // The rule as shipped waits its 5 minutes first (its group is evaluated on its own beat).
    await eventually(
      async () =>
        (await rule('baton', 'BatonWorkerUnhealthy')).state === 'pending' ? true : undefined,
      30_000,
      'the shipped BatonWorkerUnhealthy pending',
    );

    // One scheduler stops: that instance is down, not the fleet.
    await schedulers[1].stop();
    procs.delete(schedulers[1]);
    // Final states only: on a loaded machine a scrape of the running one may miss now and then.
    await eventually(
      async () => {
        const r = await rule('baton-now', 'BatonSchedulerDown');
        const firing = (r.alerts ?? []).filter((a) => a.state === 'firing');
        return firing.some((a) => a.labels.instance === target(urls[1])) ? true : undefined;
      },
      60_000,
      'BatonSchedulerDown firing for the stopped instance',
    );
    await eventually(
      async () => {
        const up = `up{job="baton-scheduler", instance="${target(urls[0])}"}`;
        const none = await rule('baton-now', 'BatonNoSchedulerUp');
        return (await value(up)) === 1 && none.state === 'inactive' ? true : undefined;
      },
      60_000,
      'the other instance up, and BatonNoSchedulerUp inactive',
    );
  });
});

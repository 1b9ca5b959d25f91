/**
 * Issue 26 item 17: the deployment recipe (Containerfile, deploy/kubernetes/*.yaml) is checked without a container
 * engine or a cluster, which this machine does not have:
 *
 * 1. every manifest validates against the Kubernetes JSON schemas (the `kubernetes-models` validators, generated
 *    from the Kubernetes OpenAPI definitions), with a negative control that a broken copy does not;
 * 2. the manifests agree with each other and with the server: selectors, named ports, secret keys, the grace period
 *    against preStop + `--drain-ms`, scrape annotations, no session affinity, non-root;
 * 3. the containers' own commands run: `serve` and `worker` started with the manifests' args and environment (paths
 *    mapped into a temp dir, `0.0.0.0` mapped to 127.0.0.1, the store a real PostgreSQL database), from a layout
 *    with only the runtime dependencies (what `npm ci --omit=dev` installs in the Containerfile), answer the probes
 *    the manifests name, run a task of a built-in tool end to end, and drain on SIGTERM within the grace period.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

import { reaped } from '../helpers/child-reaper.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { freePort } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const ROOT = resolve(import.meta.dirname, '../..');
const MANIFESTS = join(ROOT, 'deploy/kubernetes');

/** A parsed manifest (YAML), checked by the schemas below. */
type Manifest = Record<string, any>;

/** The schema validator of each kind the recipe uses; a kind not listed here fails the test. */
const VALIDATORS: Record<string, (object: Manifest) => void> = {
  'v1/ConfigMap': (o) => new ConfigMap(o as never).validate(),
  'v1/Secret': (o) => new Secret(o as never).validate(),
  'v1/Service': (o) => new Service(o as never).validate(),
  'apps/v1/Deployment': (o) => new Deployment(o as never).validate(),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never).validate(),
};

/**
 * The TypeScript interface of each kind in `kubernetes-models` (module, interface). The JSON schema validators above
 * accept fields the API does not know (`additionalProperties` is open), so a misspelled `livenesProbe` would pass
 * them and be dropped by the cluster: the manifests are also type-checked as object literals of these interfaces,
 * whose excess-property check refuses every unknown field at any depth.
 */
const INTERFACES: Record<string, [string, string]> = {
  'v1/ConfigMap': ['v1/ConfigMap', 'IConfigMap'],
  'v1/Secret': ['v1/Secret', 'ISecret'],
  'v1/Service': ['v1/Service', 'IService'],
  'apps/v1/Deployment': ['apps/v1/Deployment', 'IDeployment'],
  'policy/v1/PodDisruptionBudget': ['policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'],
};

/** Type-check `objects` as literals of their kinds' interfaces; returns each error as `<label>: <message>`. */
function typeErrors(objects: { label: string; object: Manifest }[], dir: string): string[] {
  const models = join(ROOT, 'node_modules/kubernetes-models');
  const imports = Object.values(INTERFACES).map(([module, name]) => `import type { ${name} } from '${models}/${module}.js';`);
  const lines = objects.map(({ object }, i) => {
    const known = INTERFACES[`${object.apiVersion}/${object.kind}`];
    if (!known) throw new Error(`no interface for ${object.apiVersion} ${object.kind}`);
    return `export const m${i}: ${known[1]} = ${JSON.stringify(object)};`;
  });
  const file = join(dir, 'manifests.ts');
  writeFileSync(file, [...imports, ...lines].join('\n'));
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const line = diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line : -1;
    const label = objects[line - imports.length]?.label ?? 'imports';
    return `${label}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
  });
}

function validate(object: Manifest): void {
  const validator = VALIDATORS[`${object.apiVersion}/${object.kind}`];
  if (!validator) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  validator(object);
}

function loadManifests(): { file: string; object: Manifest }[] {
  const loaded: { file: string; object: Manifest }[] = [];
  for (const file of readdirSync(MANIFESTS)
    .filter((name) => name.endsWith('.yaml'))
    .sort()) {
    for (const document of parseAllDocuments(readFileSync(join(MANIFESTS, file), 'utf8'))) {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map(String).join('; ')}`);
      loaded.push({ file, object: document.toJS() as Manifest });
    }
  }
  return loaded;
}

const manifests = loadManifests();
const find = (kind: string, name: string): Manifest => {
  const found = manifests.find(({ object }) => object.kind === kind && object.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found.object;
};
const api = find('Deployment', 'mcp-tasks-api');
const worker = find('Deployment', 'mcp-tasks-worker');
const secret = find('Secret', 'mcp-tasks-secrets');
const config = find('ConfigMap', 'mcp-tasks-config');
const containerOf = (deployment: Manifest): Manifest => deployment.spec.template.spec.containers[0];
const argValue = (args: string[], flag: string): string | undefined => {
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args[at + 1];
};

describe('deploy/kubernetes: the Kubernetes JSON schemas (issue 26 item 17)', () => {
  it('every manifest validates against the schema of its kind', () => {
    expect(manifests.map(({ object }) => `${object.kind}/${object.metadata.name}`).sort()).toEqual([
      'ConfigMap/mcp-tasks-config',
      'Deployment/mcp-tasks-api',
      'Deployment/mcp-tasks-worker',
      'PodDisruptionBudget/mcp-tasks-api',
      'PodDisruptionBudget/mcp-tasks-worker',
      'Secret/mcp-tasks-secrets',
      'Service/mcp-tasks',
    ]);
    for (const { file, object } of manifests) expect(() => validate(object), `${file} ${object.kind}`).not.toThrow();
  });

  it('negative control: a copy with a wrong type, a missing required field or an unknown kind is refused', () => {
    const wrongType = structuredClone(api);
    wrongType.spec.template.spec.containers[0].ports[0].containerPort = '3100';
    expect(() => validate(wrongType)).toThrow(/containerPort must be integer/);
    const noSelector = structuredClone(find('PodDisruptionBudget', 'mcp-tasks-api'));
    noSelector.spec.minAvailable = { nested: true };
    expect(() => validate(noSelector)).toThrow();
    const noContainers = structuredClone(worker);
    delete noContainers.spec.template.spec.containers;
    expect(() => validate(noContainers)).toThrow(/containers/);
    expect(() => validate({ apiVersion: 'apps/v1', kind: 'Deplyment', metadata: { name: 'x' } })).toThrow(/no schema/);
  });

  it('no manifest has a field the Kubernetes API does not know; negative control: a misspelled field, a nested unknown one', () => {
    const temp = makeTempDir('mcp-tasks-k8s-types-');
    try {
      const misspelled = structuredClone(api);
      const container = misspelled.spec.template.spec.containers[0];
      container.livenesProbe = container.livenessProbe;
      delete container.livenessProbe;
      const nested = structuredClone(worker);
      nested.spec.template.spec.securityContext.runAsNonRot = true;
      const errors = typeErrors(
        [
          ...manifests.map(({ file, object }) => ({ label: `${file} ${object.kind}/${object.metadata.name}`, object })),
          { label: 'control: livenesProbe', object: misspelled },
          { label: 'control: runAsNonRot', object: nested },
        ],
        temp.dir,
      );
      expect(errors).toEqual([
        expect.stringMatching(/^control: livenesProbe: .*'"livenesProbe"' does not exist in type 'IContainer'/),
        expect.stringMatching(/^control: runAsNonRot: .*'"runAsNonRot"' does not exist in type 'IPodSecurityContext'/),
      ]);
    } finally {
      temp.remove();
    }
  });
});

describe('deploy/kubernetes: the manifests agree with each other and with the server', () => {
  const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([key, value]) => labels[key] === value);

  it('the Service selects the API pods only, on a named port they declare, with no session affinity', () => {
    const service = find('Service', 'mcp-tasks');
    expect(matches(service.spec.selector, api.spec.template.metadata.labels)).toBe(true);
    expect(matches(service.spec.selector, worker.spec.template.metadata.labels)).toBe(false);
    expect(service.spec.sessionAffinity ?? 'None').toBe('None');
    const portNames = containerOf(api).ports.map((port: Manifest) => port.name);
    for (const port of service.spec.ports) expect(portNames).toContain(port.targetPort);
  });

  it('each Deployment selects its own pods and has a PodDisruptionBudget over the same pods', () => {
    for (const deployment of [api, worker]) {
      expect(matches(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
      const budget = find('PodDisruptionBudget', deployment.metadata.name);
      expect(budget.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    }
  });

  it('probes hit /healthz (liveness) and /readyz (readiness) on a declared port; Prometheus scrapes /metrics there', () => {
    for (const deployment of [api, worker]) {
      const container = containerOf(deployment);
      const ports = new Map<string, number>(container.ports.map((port: Manifest) => [port.name, port.containerPort]));
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      for (const probe of [container.livenessProbe, container.readinessProbe]) expect(ports.has(probe.httpGet.port)).toBe(true);
      const annotations = deployment.spec.template.metadata.annotations;
      expect(annotations['prometheus.io/scrape']).toBe('true');
      expect(annotations['prometheus.io/path']).toBe('/metrics');
      expect([...ports.values()]).toContain(Number(annotations['prometheus.io/port']));
    }
  });

  it('terminationGracePeriodSeconds covers preStop plus --drain-ms with a margin', () => {
    for (const deployment of [api, worker]) {
      const container = containerOf(deployment);
      const drainMs = Number(argValue(container.args, '--drain-ms'));
      expect(drainMs).toBeGreaterThan(0);
      const preStop: string[] = container.lifecycle?.preStop?.exec?.command ?? [];
      const preStopSeconds = preStop[0] === 'sleep' ? Number(preStop[1]) : 0;
      expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStopSeconds + drainMs / 1000 + 5);
    }
  });

  it('secrets come from the Secret (keys it has), never from args or the ConfigMap; pods run as non-root', () => {
    const keys = Object.keys(secret.stringData);
    for (const deployment of [api, worker]) {
      const container = containerOf(deployment);
      for (const variable of container.env) if (variable.valueFrom?.secretKeyRef) expect(keys).toContain(variable.valueFrom.secretKeyRef.key);
      expect(container.env.map((variable: Manifest) => variable.name)).toContain('MCP_TASKS_STORE');
      expect(container.args.join(' ')).not.toMatch(/postgres:\/\/|--secret|password/i);
      for (const volume of deployment.spec.template.spec.volumes) {
        if (volume.secret) for (const item of volume.secret.items ?? []) expect(keys).toContain(item.key);
        if (volume.configMap) expect(volume.configMap.name).toBe(config.metadata.name);
      }
      expect(deployment.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    }
    expect(containerOf(api).env.map((variable: Manifest) => variable.name)).toContain('MCP_TASKS_SECRET');
    expect(config.data['mcp-tasks.json']).not.toMatch(/postgres:\/\/|password/i);
  });

  it('the Containerfile: multi-stage, runtime dependencies by npm ci --omit=dev, a non-root user, the CLI as entry point', () => {
    const containerfile = readFileSync(join(ROOT, 'Containerfile'), 'utf8');
    const stages = containerfile.match(/^FROM /gm) ?? [];
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(containerfile).toMatch(/^RUN npm ci --omit=dev\b/m);
    const finalStage = containerfile.slice(containerfile.lastIndexOf('\nFROM '));
    expect(finalStage).toMatch(/^USER node$/m);
    expect(finalStage).not.toMatch(/^RUN npm ci(?! --omit=dev)/m);
    expect(finalStage).toMatch(/^ENTRYPOINT \["node", "dist\/cli\/main\.js"\]$/m);
    // Every file the image build copies from the context exists in the repository.
    for (const [, sources] of containerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of sources!.split(' ')) expect(() => readFileSync(join(ROOT, source)), source).not.toThrow(/ENOENT/);
    }
  });
});

/**
 * The image's runtime layout without an engine: dist/, package.json and node_modules holding only what
 * `npm ci --omit=dev` installs (links to the packages `npm ls --omit=dev` lists), so a runtime import of a
 * devDependency fails here as it would in the image.
 */
function runtimeLayout(dir: string): string {
  const app = join(dir, 'app');
  cpSync(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
  const listed = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((path) => path.startsWith(join(ROOT, 'node_modules') + '/'));
  for (const path of listed) {
    const target = join(app, relative(ROOT, path));
    mkdirSync(dirname(target), { recursive: true });
    try {
      symlinkSync(path, target, 'dir');
    } catch {
      // a nested package whose parent link already provides it
    }
  }
  return app;
}

interface Started {
  child: ChildProcess;
  log(): string;
  exited: Promise<number | null>;
}

/** Map the manifests' container paths, addresses and `$(VAR)` references onto this machine. */
function localArgs(args: string[], paths: Record<string, string>, env: Record<string, string>, ports: Record<string, string>): string[] {
  return args.map((arg, at) => {
    let mapped = arg.replace(/\$\((\w+)\)/g, (_, name: string) => env[name] ?? '');
    for (const [from, to] of Object.entries(paths)) if (mapped.startsWith(from)) mapped = to + mapped.slice(from.length);
    if (mapped === '0.0.0.0') mapped = '127.0.0.1'; // tests talk to loopback only
    const flag = args[at - 1];
    if (flag && ports[flag]) mapped = ports[flag];
    return mapped;
  });
}

describe("deploy/kubernetes: the containers' commands run as the manifests say", () => {
  const temp = makeTempDir('mcp-tasks-deploy-');
  let database: TestDatabase;
  const started: Started[] = [];
  let apiPort: number;
  let workerHealthPort: number;
  let app: string;
  const token = JSON.parse(secret.stringData['tokens.json']).tokens[0].token as string;

  beforeAll(async () => {
    database = await createTestDatabase();
    app = runtimeLayout(temp.dir);
    const configDir = join(temp.dir, 'etc/config');
    const secretDir = join(temp.dir, 'etc/secret');
    const logs = join(temp.dir, 'srv/logs');
    for (const dir of [configDir, secretDir, logs, join(temp.dir, 'data-api'), join(temp.dir, 'data-worker')]) mkdirSync(dir, { recursive: true });
    // The ConfigMap and the Secret as Kubernetes mounts them: one file per key.
    writeFileSync(join(configDir, 'mcp-tasks.json'), config.data['mcp-tasks.json']);
    writeFileSync(join(secretDir, 'tokens.json'), secret.stringData['tokens.json']);
    writeFileSync(
      join(logs, 'app.log'),
      ['2026-12-05 10:00:00 INFO service started', '2026-12-05 10:00:01 ERROR disk full on /var', '2026-12-05 10:00:02 INFO done', ''].join('\n'),
    );
    // The config names the mount paths of the pods; this copy points them at the temp dir.
    const file = JSON.parse(config.data['mcp-tasks.json']);
    file.auth = `tokens:${join(secretDir, 'tokens.json')}`;
    file.roots = [logs];
    delete file.$schema;
    writeFileSync(join(configDir, 'mcp-tasks.json'), JSON.stringify(file));

    apiPort = await freePort();
    workerHealthPort = await freePort();
    const secretValues: Record<string, string> = { 'store-url': database.url, 'server-secret': secret.stringData['server-secret'] };
    const start = async (deployment: Manifest, podName: string, dataDir: string, ready: RegExp): Promise<Started> => {
      const container = containerOf(deployment);
      const env: Record<string, string> = { POD_NAME: podName };
      for (const variable of container.env) {
        if (variable.valueFrom?.fieldRef) continue;
        env[variable.name] = variable.valueFrom?.secretKeyRef ? secretValues[variable.valueFrom.secretKeyRef.key]! : variable.value;
      }
      const args = localArgs(container.args, { '/etc/mcp-tasks/config': configDir, '/etc/mcp-tasks/secret': secretDir, '/data': dataDir }, env, {
        '--port': String(apiPort),
        '--health-port': String(workerHealthPort),
      });
      // The worker's health port comes from the config file (worker.healthPort); this run needs a free one.
      if (container.name === 'worker') args.push('--health-port', String(workerHealthPort));
      const child = reaped(
        spawn(process.execPath, [join(app, 'dist/cli/main.js'), ...args], {
          cwd: app,
          stdio: ['ignore', 'ignore', 'pipe'],
          // The manifests' environment only, plus no inline grace (as every test server): the task test below follows
          // a short analyze_logs run as a task, which the grace would answer inline (issue 27 §5).
          env: { PATH: process.env.PATH ?? '', MCP_TASKS_INLINE_GRACE_MS: '0', ...env },
        }),
      );
      let output = '';
      child.stderr?.on('data', (chunk) => (output += chunk));
      const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
      const process_ = { child, log: () => output, exited };
      started.push(process_);
      const deadline = Date.now() + 20_000;
      while (!ready.test(output)) {
        if (child.exitCode !== null) throw new Error(`${container.name} exited ${child.exitCode}:\n${output}`);
        if (Date.now() > deadline) throw new Error(`${container.name} did not start:\n${output}`);
        await new Promise((wake) => setTimeout(wake, 50));
      }
      return process_;
    };
    await start(api, 'mcp-tasks-api-7f9c-abcde', join(temp.dir, 'data-api'), /mcp-tasks: serving http:\/\//);
    await start(worker, 'mcp-tasks-worker-5d8b-fghij', join(temp.dir, 'data-worker'), /mcp-tasks: worker \S+ running/);
  }, 60_000);

  afterAll(async () => {
    for (const { child, exited } of started) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
    await database?.drop();
    temp.remove();
  });

  it('the processes ran from a layout with every runtime dependency and no devDependency', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: object; devDependencies: object };
    const installed = new Set(
      readdirSync(join(app, 'node_modules')).flatMap((name) =>
        name.startsWith('@') ? readdirSync(join(app, 'node_modules', name)).map((scoped) => `${name}/${scoped}`) : [name],
      ),
    );
    for (const name of Object.keys(manifest.dependencies)) expect(installed.has(name), name).toBe(true);
    // Build and test tools never reach the image (some devDependencies do, as dependencies of runtime packages:
    // @opentelemetry/api comes with prom-client).
    for (const name of ['typescript', 'vitest', 'eslint', 'esbuild', 'playwright-core', 'kubernetes-models', 'yaml']) {
      expect(name in manifest.devDependencies, name).toBe(true);
      expect(installed.has(name), name).toBe(false);
    }
  });

  it('the probe paths of both Deployments answer 200 on the ports they name', async () => {
    for (const [deployment, port] of [
      [api, apiPort],
      [worker, workerHealthPort],
    ] as const) {
      const container = containerOf(deployment);
      for (const probe of [container.livenessProbe, container.readinessProbe]) {
        const response = await fetch(`http://127.0.0.1:${port}${probe.httpGet.path}`);
        expect(response.status, `${container.name} ${probe.httpGet.path}: ${await response.text()}`).toBe(200);
      }
      const metrics = await fetch(`http://127.0.0.1:${port}${deployment.spec.template.metadata.annotations['prometheus.io/path']}`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(/^mcp_tasks_/m);
    }
  });

  it("a task of a built-in tool created on the API pod runs on the worker pod, with the Secret's token", async () => {
    const url = `http://127.0.0.1:${apiPort}/mcp`;
    const refused = await postModern(url, 'tools/list', {}, {});
    expect(refused.status).toBe(401);
    const created = await postModern(url, 'tools/call', { name: 'analyze_logs', arguments: { path: join(temp.dir, 'srv/logs') } }, { token });
    const taskId = created.body.result?.taskId;
    expect(typeof taskId, JSON.stringify(created.body)).toBe('string');
    const done = await pollModernTask(url, taskId as string, { token, timeoutMs: 30_000 });
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const runners = started[1]!.log();
    expect(started[0]!.log()).not.toMatch(/claimed|lease acquired/i);
    expect(runners).not.toMatch(/"level":(50|60)/);
  });

  it('SIGTERM drains and exits 0 within terminationGracePeriodSeconds', async () => {
    for (const [index, deployment] of [
      [0, api],
      [1, worker],
    ] as const) {
      const { child, exited } = started[index]!;
      const graceMs = deployment.spec.template.spec.terminationGracePeriodSeconds * 1000;
      const begun = Date.now();
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(Date.now() - begun).toBeLessThan(graceMs);
    }
  });
});

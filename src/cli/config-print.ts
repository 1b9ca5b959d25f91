import { type ResolvedConfig, SETTINGS } from './config/resolve.js';
import { jsonDocument } from './json-output.js';
import { describeStore, resolveStoreSpec } from './store-spec.js';

/** A value as `config print` shows it: secrets masked (a store URL keeps all but its password). */
export function shownValue(key: string, value: unknown): unknown {
  if (key === 'secret' || key === 'encryptionKey') return '***';
  if (key === 'encryptionKeysOld' && Array.isArray(value)) return value.map(() => '***');
  if (key === 'store' && typeof value === 'string') return describeStore(resolveStoreSpec(value, undefined, '.'));
  return value;
}

/**
 * `mcp-tasks config print`: every setting that has a value, with the source it came from (`flag --x`, `env X`,
 * `file <path>`, `default`), secrets masked. `--json` prints `{configFile, settings: {key: {value, source}}}`.
 */
export function configPrint(resolved: ResolvedConfig, json: boolean): void {
  const rows = SETTINGS.filter((setting) => resolved.values.has(setting.key)).map((setting) => ({
    key: setting.key,
    value: shownValue(setting.key, resolved.values.get(setting.key)),
    source: resolved.sources.get(setting.key) ?? 'default',
  }));
  if (json) {
    process.stdout.write(
      jsonDocument({
        configFile: resolved.configFile ?? null,
        settings: Object.fromEntries(rows.map((row) => [row.key, { value: row.value, source: row.source }])),
      }),
    );
    return;
  }
  const width = Math.max(...rows.map((row) => row.key.length));
  const lines = rows.map((row) => `${row.key.padEnd(width)}  ${JSON.stringify(row.value)}  (${row.source})`);
  process.stdout.write(`# precedence: flag > env > file > default; config file: ${resolved.configFile ?? '(none)'}\n${lines.join('\n')}\n`);
}

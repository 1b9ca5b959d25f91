/**
 * One planted example of every secret kind, for the redaction and detection tests. The values are fake and
 * assembled at run time, so that secret scanners (and push protection) do not flag this file.
 */
import { SECRET_KINDS, type SecretKind } from '../../src/core/redaction.js';

/** Lines of a file holding secrets of one kind, and the values that must never be echoed. */
export interface PlantedSecret {
  kind: SecretKind;
  lines: string[];
  /** Each long enough that its tail (all but the 4 characters a preview may keep) identifies it. */
  values: string[];
}

const join = (...parts: string[]) => parts.join('');
const PEM_BODY = [
  join('MIIEowIBAAKCAQEAu1SU1LfVLPHCozMx', 'H2Mo4lgOEePzNm0tRgeLezV6ffAt0gun'),
  join('VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTK', 'En5u+qKhbwKfBstIs+bMY2Zkp18gnTxK'),
];
const STRIPE_KEYS = [
  join('sk_', 'live_', '4eC39HqLyjWDarjtT1zdp7dc'),
  join('rk_', 'live_', '51Hx9YzABCdefGHI'),
  join('sk_', 'test_', 'BQokikJOvBiI2HlWgH4olfQ2'),
];
const PASSWORD_QUOTED = join('hunter2', 'hunter2hunter2');
const PASSWORD_COLON = join('s3cr3t', 'passw0rd');
const PASSWORD_EQUALS = join('Tr0ub4', 'dorTr0ub4dor');

export const PLANTED_SECRETS: readonly PlantedSecret[] = [
  {
    kind: 'private-key',
    lines: [`-----BEGIN RSA ${'PRIVATE'} KEY-----`, ...PEM_BODY, 'Ag==', `-----END RSA ${'PRIVATE'} KEY-----`],
    values: PEM_BODY,
  },
  secret('aws-access-key-id', (v) => `aws_access_key_id = ${v}`, join('AKIA', 'Q3EXAMPLE7TESTK1')),
  secret('aws-secret-access-key', (v) => `AWS_SECRET_ACCESS_KEY ${v}`, join('wJalrXUtnFEMI/K7MDENG/', 'bPxRfiCYEXAMPLEKEY')),
  secret('github-token', (v) => `git remote set-url origin ${v}`, join('ghp_', 'a1B2c3D4e5F6g7H8i9J0'.repeat(2).slice(0, 36))),
  secret('gitlab-token', (v) => `GITLAB_TOKEN=${v}`, join('glpat-', 'x7Kq2mPz9Lw4', 'Rt8Vb3Nc')),
  secret('slack-token', (v) => `SLACK_BOT=${v}`, join('xoxb-', '1234567890-', 'abcdefghijKLMNOP')),
  secret('slack-webhook', (v) => `url: https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/${v}`, join('Zq8Wn2Lx5Rv9', 'Tk3Mp7Yc1Hd4')),
  secret(
    'azure-storage-key',
    (v) => `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${v};EndpointSuffix=core.windows.net`,
    join('Q29uc3RhbnRseVJhbmRvbUJ5dGVzRm9yQXp1cmVTdG9y', 'YWdlS2V5VGVzdDEyMzQ1Njc4OTBhYmNkZWZnaGlqa2', '=='),
  ),
  secret('azure-sas-token', (v) => `https://acme.blob.core.windows.net/c/b?sv=2021-06-08&sp=r&sig=${v}`, join('k9Xw2Pq7Lm4Rt8Vb', '3Nc6Hd1Jz5Yf0Gs%2BQ%3D')),
  secret('docker-auth', (v) => `{"auths":{"ghcr.io":{"auth":"${v}"}}}`, join('ZGVwbG95Olo5', 'cVhtNExyMnZQOHdL')),
  { kind: 'stripe-key', lines: STRIPE_KEYS.map((v) => `stripe.setApiKey("${v}")`), values: STRIPE_KEYS },
  secret('google-api-key', (v) => `maps key=${v}&libraries=places`, join('AIza', 'SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q')),
  secret('npm-token', (v) => `//registry.npmjs.org/:_authToken=${v}`, join('npm_', 'aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789')),
  secret('jwt', (v) => `session ${v}`, join('eyJhbGciOiJIUzI1NiJ9.', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0.', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U')),
  secret('url-credentials', (v) => `DATABASE_URL=postgres://app:${v}@db.example.com/app`, join('S3cret', 'Passw0rd')),
  secret('basic-auth', (v) => `Authorization: Basic ${v}`, join('dXNlcjpodW50', 'ZXIyaHVudGVyMg==')),
  secret('bearer-token', (v) => `Authorization: Bearer ${v}`, join('vF3kQ9xZ2mW7', 'pL4sT8nB1cR6yH0j')),
  {
    kind: 'password',
    lines: [`password = "${PASSWORD_QUOTED}"`, `passwd: ${PASSWORD_COLON}`, `pwd=${PASSWORD_EQUALS}`],
    values: [PASSWORD_QUOTED, PASSWORD_COLON, PASSWORD_EQUALS],
  },
  secret('credential-assignment', (v) => `api_key = "${v}"`, join('Zx9Qw2Lm7R', 't4Yp1Vb8Nc3Kd6')),
];

function secret(kind: SecretKind, line: (value: string) => string, value: string): PlantedSecret {
  return { kind, lines: [line(value)], values: [value] };
}

/** A key in a file name, which the tools echo as a path. */
export const KEY_IN_FILE_NAME = join('AKIA', 'QQQQQQQQQQQQQQQQ');

// Every kind is planted: a kind added to the rules without an example here fails the tests.
if (SECRET_KINDS.some((kind) => !PLANTED_SECRETS.some((planted) => planted.kind === kind))) {
  throw new Error('planted-secrets.ts lacks an example of a secret kind');
}

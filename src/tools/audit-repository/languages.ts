/**
 * Language of a source file by its name, and names that are certainly binary (skipped without being read).
 */

const BY_EXTENSION: Record<string, string> = {
  ts: 'TypeScript',
  tsx: 'TypeScript',
  mts: 'TypeScript',
  cts: 'TypeScript',
  js: 'JavaScript',
  jsx: 'JavaScript',
  mjs: 'JavaScript',
  cjs: 'JavaScript',
  py: 'Python',
  go: 'Go',
  rs: 'Rust',
  java: 'Java',
  kt: 'Kotlin',
  kts: 'Kotlin',
  scala: 'Scala',
  c: 'C',
  h: 'C',
  cc: 'C++',
  cpp: 'C++',
  cxx: 'C++',
  hpp: 'C++',
  hh: 'C++',
  cs: 'C#',
  swift: 'Swift',
  m: 'Objective-C',
  rb: 'Ruby',
  php: 'PHP',
  pl: 'Perl',
  lua: 'Lua',
  r: 'R',
  dart: 'Dart',
  ex: 'Elixir',
  exs: 'Elixir',
  erl: 'Erlang',
  hs: 'Haskell',
  clj: 'Clojure',
  sh: 'Shell',
  bash: 'Shell',
  zsh: 'Shell',
  ps1: 'PowerShell',
  sql: 'SQL',
  html: 'HTML',
  htm: 'HTML',
  css: 'CSS',
  scss: 'SCSS',
  less: 'Less',
  vue: 'Vue',
  svelte: 'Svelte',
  json: 'JSON',
  yaml: 'YAML',
  yml: 'YAML',
  toml: 'TOML',
  xml: 'XML',
  md: 'Markdown',
  mdx: 'Markdown',
  rst: 'reStructuredText',
  txt: 'Text',
  tf: 'Terraform',
  proto: 'Protocol Buffers',
  graphql: 'GraphQL',
  gradle: 'Gradle',
  ini: 'INI',
  cfg: 'INI',
  env: 'dotenv',
  pem: 'PEM',
  key: 'PEM',
};

const BY_NAME: Record<string, string> = {
  Dockerfile: 'Dockerfile',
  Makefile: 'Makefile',
  Jenkinsfile: 'Groovy',
  Gemfile: 'Ruby',
  Rakefile: 'Ruby',
  '.env': 'dotenv',
};

const BINARY_EXTENSIONS = new Set(
  (
    'png jpg jpeg gif bmp ico webp tiff psd pdf zip gz tgz bz2 xz 7z rar jar war ear class o a so dylib dll ' +
    'exe bin wasm woff woff2 ttf otf eot mp3 mp4 mov avi mkv webm wav flac ogg sqlite db pyc pyo node'
  ).split(' '),
);

function extension(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
}

/** The language of a file by its base name, or `Other`. */
export function languageOf(name: string): string {
  return BY_NAME[name] ?? BY_EXTENSION[extension(name)] ?? (name.startsWith('.env.') ? 'dotenv' : 'Other');
}

/** Whether the name alone says the file is binary. */
export function hasBinaryExtension(name: string): boolean {
  return BINARY_EXTENSIONS.has(extension(name));
}

/**
 * Line generators for the demo corpus, one per system, each in the real format of that system (syslog, sshd,
 * nginx access and error, HDFS, Zookeeper, a Java service with stack traces, the kernel) with realistic
 * variable parts and a mix of severities.
 */
import type { Random } from './random.js';

/** A log-writing system of the demo corpus. */
export interface LogStyle {
  /** Directory under the host directory. */
  directory: string;
  /** File name of the current log (rotations append `.N`). */
  fileName: string;
  /**
   * Lines for one event at `epochMs`: usually one, several for a stack trace.
   *
   * @param host - the host name of the file.
   */
  event(random: Random, epochMs: number, host: string): string[];
  /**
   * Lines for an event during the incident of the corpus's last hours (see `INCIDENT_HOURS`), or `null` for an
   * ordinary event: what `analyze_logs` reports as new or spiking.
   */
  incident?(random: Random, epochMs: number, host: string): string[] | null;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const USERS = ['alice', 'bob', 'carol', 'deploy', 'backup', 'postgres', 'www-data', 'svc-build'];
const BAD_USERS = ['admin', 'test', 'oracle', 'ubuntu', 'guest', 'ftpuser', 'pi', 'git'];
const URLS = ['/', '/index.html', '/api/v1/orders', '/api/v1/users', '/static/app.js', '/login', '/healthz'];
const AGENTS = ['Mozilla/5.0 (X11; Linux x86_64)', 'curl/8.5.0', 'Go-http-client/1.1', 'kube-probe/1.29'];
const CLASSES = ['OrderService', 'PaymentClient', 'InventoryRepository', 'UserController', 'CacheWarmer'];

const p2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const p3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/** `Mar  1 13:55:36` */
function syslogTime(ms: number): string {
  const d = new Date(ms);
  const day = d.getUTCDate();
  return `${MONTHS[d.getUTCMonth()]} ${day < 10 ? ` ${day}` : day} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`;
}

/** `2024-03-01<sep>13:55:36<frac>123` */
function isoTime(ms: number, separator: string, fraction: string): string {
  const d = new Date(ms);
  return (
    `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}${separator}` +
    `${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}${fraction}${p3(d.getUTCMilliseconds())}`
  );
}

const syslog: LogStyle = {
  directory: 'syslog',
  fileName: 'syslog',
  event(r, ms, host) {
    const head = `${syslogTime(ms)} ${host}`;
    return [
      r.weighted<() => string>([
        [() => `${head} CRON[${r.int(1000, 65000)}]: (root) CMD (run-parts /etc/cron.hourly)`, 5],
        [() => `${head} systemd[1]: Started Session ${r.int(1, 9000)} of user ${r.pick(USERS)}.`, 4],
        [() => `${head} systemd[1]: ${r.pick(['nginx', 'docker', 'ssh', 'cron'])}.service: Succeeded.`, 2],
        [() => `${head} dhclient[${r.int(300, 900)}]: DHCPACK of ${r.ip()} from ${r.ip()}`, 2],
        [() => `${head} rsyslogd: action 'action-${r.int(0, 9)}-builtin:omfwd' suspended (module 'builtin:omfwd'), retry 0`, 1],
        [() => `${head} systemd[1]: Failed to start ${r.pick(['backup', 'certbot', 'fstrim'])}.service.`, 1],
      ])(),
    ];
  },
};

const auth: LogStyle = {
  directory: 'auth',
  fileName: 'auth.log',
  event(r, ms, host) {
    const head = `${syslogTime(ms)} ${host} sshd[${r.int(1000, 65000)}]:`;
    const port = r.int(1024, 65535);
    return [
      r.weighted<() => string>([
        [() => `${head} Accepted publickey for ${r.pick(USERS)} from ${r.ip()} port ${port} ssh2: ED25519 SHA256:${r.hex(43)}`, 4],
        [() => `${head} Failed password for invalid user ${r.pick(BAD_USERS)} from ${r.ip(true)} port ${port} ssh2`, 5],
        [() => `${head} Invalid user ${r.pick(BAD_USERS)} from ${r.ip(true)} port ${port}`, 4],
        [() => `${head} Connection closed by authenticating user root ${r.ip(true)} port ${port} [preauth]`, 3],
        [() => `${head} pam_unix(sshd:session): session opened for user ${r.pick(USERS)}(uid=${r.int(1000, 1010)}) by (uid=0)`, 3],
        [() => `${head} error: maximum authentication attempts exceeded for root from ${r.ip(true)} port ${port} ssh2 [preauth]`, 1],
      ])(),
    ];
  },
};

const nginxAccess: LogStyle = {
  directory: 'nginx',
  fileName: 'access.log',
  event(r, ms) {
    const d = new Date(ms);
    const time = `${p2(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} +0000`;
    const status = r.weighted([
      [200, 80],
      [304, 6],
      [404, 8],
      [499, 1],
      [500, 3],
      [502, 2],
    ]);
    const url = `${r.pick(URLS)}${r.next() < 0.3 ? `/${r.int(1, 99999)}` : ''}`;
    return [
      `${r.ip(r.next() < 0.5)} - - [${time}] "${r.pick(['GET', 'GET', 'GET', 'POST', 'PUT'])} ${url} HTTP/1.1" ${status} ${r.int(0, 50000)} "-" "${r.pick(AGENTS)}" ${(r.next() * 2).toFixed(3)}`,
    ];
  },
};

const nginxError: LogStyle = {
  directory: 'nginx',
  fileName: 'error.log',
  event(r, ms) {
    const head = `${isoTime(ms, ' ', '.').slice(0, 19).replaceAll('-', '/')} [${r.weighted([
      ['error', 5],
      ['warn', 3],
      ['crit', 1],
    ])}] ${r.int(10, 99)}#0: *${r.int(1, 999999)}`;
    const upstream = `${r.ip()}:${r.pick([8080, 8081, 9000])}`;
    return [
      r.weighted<() => string>([
        [
          () =>
            `${head} connect() failed (111: Connection refused) while connecting to upstream, client: ${r.ip(true)}, server: shop.example.com, upstream: "http://${upstream}/"`,
          4,
        ],
        [
          () =>
            `${head} upstream timed out (110: Connection timed out) while reading response header from upstream, client: ${r.ip(true)}, upstream: "http://${upstream}/"`,
          3,
        ],
        [() => `${head} open() "/usr/share/nginx/html${r.pick(URLS)}" failed (2: No such file or directory), client: ${r.ip(true)}`, 2],
      ])(),
    ];
  },
};

const hdfs: LogStyle = {
  directory: 'hadoop',
  fileName: 'hadoop-hdfs-datanode.log',
  event(r, ms) {
    const d = new Date(ms);
    const time = `${p2(d.getUTCFullYear() % 100)}${p2(d.getUTCMonth() + 1)}${p2(d.getUTCDate())} ${p2(d.getUTCHours())}${p2(d.getUTCMinutes())}${p2(d.getUTCSeconds())}`;
    const head = `${time} ${r.int(10, 999)}`;
    const block = `blk_${r.next() < 0.5 ? '-' : ''}${r.int(1e9, 9e9)}${r.int(1e8, 9e8)}`;
    const node = `${r.ip()}:50010`;
    return [
      r.weighted<() => string>([
        [() => `${head} INFO dfs.DataNode$PacketResponder: PacketResponder ${r.int(0, 2)} for block ${block} terminating`, 5],
        [() => `${head} INFO dfs.DataNode$DataXceiver: Receiving block ${block} src: /${r.ip()}:${r.int(30000, 60000)} dest: /${node}`, 5],
        [
          () => `${head} INFO dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap updated: ${node} is added to ${block} size ${r.int(1000, 67108864)}`,
          4,
        ],
        [() => `${head} WARN dfs.DataNode$DataXceiver: ${node}:Got exception while serving ${block} to /${r.ip()}:`, 1],
        [() => `${head} ERROR dfs.DataNode: ${node}:DataXceiver: java.io.IOException: Block ${block} is valid, and cannot be written to.`, 1],
      ])(),
    ];
  },
};

const zookeeper: LogStyle = {
  directory: 'zookeeper',
  fileName: 'zookeeper.log',
  event(r, ms) {
    const time = isoTime(ms, ' ', ',');
    const myid = r.int(1, 3);
    return [
      r.weighted<() => string>([
        [
          () =>
            `${time} - INFO  [NIOServerCxn.Factory:0.0.0.0/0.0.0.0:2181:NIOServerCnxnFactory@197] - Accepted socket connection from /${r.ip()}:${r.int(30000, 60000)}`,
          5,
        ],
        [
          () =>
            `${time} - INFO  [NIOServerCxn.Factory:0.0.0.0/0.0.0.0:2181:NIOServerCnxn@1001] - Closed socket connection for client /${r.ip()}:${r.int(30000, 60000)} which had sessionid 0x${r.hex(15)}`,
          4,
        ],
        [() => `${time} - WARN  [SendWorker:${r.int(1, 3)}:QuorumCnxManager$SendWorker@688] - Send worker leaving thread`, 2],
        [
          () =>
            `${time} - INFO  [QuorumPeer[myid=${myid}]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774] - Notification time out: ${r.pick([400, 800, 1600, 3200, 6400])}`,
          2,
        ],
        [() => `${time} - ERROR [CommitProcessor:${myid}:NIOServerCnxn@180] - Unexpected Exception: java.nio.channels.CancelledKeyException`, 1],
      ])(),
    ];
  },
};

const app: LogStyle = {
  directory: 'app',
  fileName: 'orders-service.log',
  // The connection pool runs dry: an error never seen before.
  incident(r, ms) {
    if (r.next() >= 0.2) return null;
    const time = `${isoTime(ms, 'T', '.')}Z`;
    return [
      `${time} ERROR [http-nio-8080-exec-${r.int(1, 40)}] c.e.orders.OrderRepository - HikariPool-1 - Connection is not available, request timed out after 30000ms.`,
      'java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request timed out after 30000ms.',
      '\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)',
      '\tat com.example.orders.OrderRepository.save(OrderRepository.java:88)',
    ];
  },
  event(r, ms) {
    const time = `${isoTime(ms, 'T', '.')}Z`;
    const thread = `http-nio-8080-exec-${r.int(1, 40)}`;
    const cls = r.pick(CLASSES);
    const level = r.weighted([
      ['INFO', 80],
      ['DEBUG', 8],
      ['WARN', 8],
      ['ERROR', 4],
    ]);
    const head = `${time} ${level.padEnd(5)} [${thread}] c.e.orders.${cls} -`;
    if (level === 'ERROR') {
      const order = r.int(100000, 999999);
      return [
        `${head} Failed to process order ${order}`,
        `java.lang.IllegalStateException: order ${order} has no payment`,
        `\tat com.example.orders.${cls}.process(${cls}.java:${r.int(40, 400)})`,
        `\tat com.example.orders.OrderController.submit(OrderController.java:${r.int(40, 200)})`,
        `\tat java.base/java.lang.Thread.run(Thread.java:1583)`,
      ];
    }
    if (level === 'WARN') return [`${head} Slow query took ${r.int(500, 9000)} ms (threshold 500 ms)`];
    if (level === 'DEBUG') return [`${head} Cache hit ratio ${(r.next() * 100).toFixed(1)}% for region orders`];
    return [
      r.weighted<() => string>([
        [() => `${head} Order ${r.int(100000, 999999)} created for customer ${r.int(1000, 99999)} in ${r.int(3, 900)} ms`, 5],
        [() => `${head} GET /api/v1/orders/${r.int(100000, 999999)} completed with status 200 in ${r.int(1, 300)} ms`, 4],
        [() => `${head} User ${r.pick(USERS)} logged in from ${r.ip(true)}`, 2],
      ])(),
    ];
  },
};

const kernel: LogStyle = {
  directory: 'kernel',
  fileName: 'kern.log',
  // The database host runs out of memory again and again.
  incident(r, ms, host) {
    if (r.next() >= 0.9) return null;
    const head = `${syslogTime(ms)} ${host} kernel: [${r.int(1, 999999)}.${String(r.int(0, 999999)).padStart(6, '0')}]`;
    return [`${head} Out of memory: Killed process ${r.int(1000, 65000)} (java) total-vm:${r.int(1e6, 9e6)}kB, anon-rss:${r.int(1e5, 9e5)}kB`];
  },
  event(r, ms, host) {
    const head = `${syslogTime(ms)} ${host} kernel: [${r.int(1, 999999)}.${String(r.int(0, 999999)).padStart(6, '0')}]`;
    return [
      r.weighted<() => string>([
        [
          () =>
            `${head} [UFW BLOCK] IN=eth0 OUT= MAC=${r.hex(2)}:${r.hex(2)}:${r.hex(2)}:${r.hex(2)}:${r.hex(2)}:${r.hex(2)} SRC=${r.ip(true)} DST=${r.ip()} LEN=${r.int(40, 1500)} PROTO=TCP SPT=${r.int(1024, 65535)} DPT=${r.pick([22, 23, 3389, 5432])}`,
          5,
        ],
        [() => `${head} EXT4-fs (sda${r.int(1, 3)}): mounted filesystem with ordered data mode. Quota mode: none.`, 1],
        [() => `${head} e1000e: eth${r.int(0, 1)} NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None`, 2],
        [() => `${head} Out of memory: Killed process ${r.int(1000, 65000)} (java) total-vm:${r.int(1e6, 9e6)}kB, anon-rss:${r.int(1e5, 9e5)}kB`, 1],
        [() => `${head} usb 1-${r.int(1, 4)}: new high-speed USB device number ${r.int(2, 20)} using xhci_hcd`, 1],
      ])(),
    ];
  },
};

/** Every style, in the order files are assigned to them. */
export const STYLES: readonly LogStyle[] = [syslog, auth, nginxAccess, nginxError, hdfs, zookeeper, app, kernel];

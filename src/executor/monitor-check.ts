/**
 * One check of a container's monitor (a DesiredLRP's `monitor`): a TCP connect, an HTTP GET that
 * answers 2xx/3xx, or a command run inside the container with `runc exec`. Each try is bounded by
 * `timeoutMs` (the monitor's timeout_ms), so a hung app counts as a failed check, not a stall.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { type Monitor, monitorTimingDefaults } from '../bbs/index.js';

/** The container a command check runs in; absent before its pod exists. */
export interface MonitoredPod {
  readonly uuid: string;
  readonly runcRoot: string;
}

export async function checkMonitor(
  monitor: Monitor,
  address: string,
  pod: MonitoredPod | undefined,
  timeoutMs: number = monitorTimingDefaults.timeout_ms,
): Promise<boolean> {
  try {
    if ('tcp' in monitor) {
      return await new Promise<boolean>((resolve) => {
        const socket = connect({ host: address, port: monitor.tcp, timeout: timeoutMs });
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
        socket.once('timeout', () => {
          socket.destroy();
          resolve(false);
        });
      });
    }
    if ('http' in monitor) {
      const response = await fetch(`http://${address}:${monitor.http.port}${monitor.http.path}`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      return response.status >= 200 && response.status < 400;
    }
    if (!pod) return false;
    return await new Promise<boolean>((resolve) => {
      const child = spawn('runc', ['--root', pod.runcRoot, 'exec', pod.uuid, ...monitor.command], {
        stdio: 'ignore',
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code === 0);
      });
      child.once('error', () => resolve(false));
    });
  } catch {
    // catch-all: a check that cannot even run is a failed check; the monitor counts it as such.
    return false;
  }
}

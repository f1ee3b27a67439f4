/**
 * The cell's host ports for published container ports: a port is taken from the range for a
 * container's run, given back when that run fails or the container is deleted, and marked taken
 * again for pods adopted after a restart, so two containers never publish on one host port.
 */
import type { PortMapping } from '../bbs/index.js';
import { BerthError } from '../core/index.js';

export class HostPortPool {
  readonly #from: number;
  readonly #to: number;
  readonly #used = new Set<number>();

  constructor(range: { readonly from: number; readonly to: number } = { from: 61000, to: 61999 }) {
    this.#from = range.from;
    this.#to = range.to;
  }

  /** A host port for each container port, lowest free first; none taken if the range runs out. */
  take(containerPorts: readonly number[]): PortMapping[] {
    const mappings: PortMapping[] = [];
    for (const containerPort of containerPorts) {
      let host = this.#from;
      while (host <= this.#to && this.#used.has(host)) host++;
      if (host > this.#to) {
        this.release(mappings);
        throw new BerthError('resource_exhausted', `No free host port in ${this.#from}-${this.#to}`);
      }
      this.#used.add(host);
      mappings.push({ container_port: containerPort, host_port: host });
    }
    return mappings;
  }

  /** Ports an adopted pod already publishes. */
  markTaken(ports: readonly { readonly host_port: number }[]): void {
    for (const p of ports) this.#used.add(p.host_port);
  }

  release(ports: readonly { readonly host_port: number }[]): void {
    for (const p of ports) this.#used.delete(p.host_port);
  }
}

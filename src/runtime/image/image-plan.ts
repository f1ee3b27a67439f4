import type { SourceFile } from './image-source.js';

/** One blob an import will put into the store, with what its manifest promises about it. */
export interface PlannedBlob {
  readonly file: SourceFile;
  /** For messages: "layer 2 (blobs/sha256/ab…)". */
  readonly what: string;
  readonly expected?: { readonly digest: string; readonly size?: number };
  /** Declared media type; undefined means sniff the bytes (docker-archive has none). */
  readonly mediaType?: string;
}

/** What a format reader found in an archive or layout: the one image to import. */
export interface ImagePlan {
  readonly config: PlannedBlob;
  readonly layers: readonly PlannedBlob[];
  /** The manifest as imported (OCI layouts); undefined when the store writes one (docker-archive). */
  readonly manifest?: { readonly bytes: Buffer; readonly mediaType: string };
  readonly names: readonly string[];
}

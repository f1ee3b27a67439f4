/**
 * The contract between the image store and the pod runtime. The store owns everything under
 * `<data dir>/images`; pods only ever read `rootfs` (as an overlayfs lower dir) and `config`.
 */

/** The "config" section of an OCI / docker image config blob, the part a runtime honours. */
export interface ImageRuntimeConfig {
  readonly Entrypoint?: readonly string[] | null;
  readonly Cmd?: readonly string[] | null;
  readonly Env?: readonly string[] | null;
  readonly WorkingDir?: string;
  readonly User?: string;
  readonly ExposedPorts?: Readonly<Record<string, unknown>> | null;
  readonly Labels?: Readonly<Record<string, string>> | null;
  readonly StopSignal?: string;
}

export interface ImageSummary {
  /** `sha256:<hex>` of the image config blob, as docker and podman name image ids. */
  readonly id: string;
  /** `name:tag` references pointing at this image. */
  readonly names: readonly string[];
  /** `sha256:<hex>` of the manifest the image was imported or pulled as. */
  readonly manifestDigest: string;
  /** Sum of the compressed layer blob sizes, bytes. */
  readonly size: number;
  /** ISO-8601 time of import. */
  readonly created: string;
}

export interface ResolvedImage extends ImageSummary {
  readonly config: ImageRuntimeConfig;
  /**
   * Absolute path of the image's flattened, read-only root filesystem (all layers applied with
   * their whiteouts). Pods mount it as the lower dir of an overlay; nothing ever writes to it.
   */
  readonly rootfs: string;
}

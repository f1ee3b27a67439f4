/**
 * One file of an image being imported, on the local disk. For archives the file was staged in
 * the store's `tmp/` and hashed while staged (`digest` set), so it can be renamed into the blob
 * store without a second read; for layout directories it is the user's file, hashed on copy.
 */
export interface SourceFile {
  /** Absolute path of the bytes now; moves into the blob store once adopted. */
  path: string;
  readonly size: number;
  /** sha256 digest when already known from staging. */
  readonly digest?: string;
  /** Whether `path` is a staged temp file the store may rename (rather than copy). */
  readonly staged: boolean;
}

/** What an importer reads an image from: an unpacked archive or an OCI layout directory. */
export interface ImageSource {
  /** The user's FILE or DIR, for messages. */
  readonly description: string;
  has(path: string): boolean;
  /** The file at `path` (archive-relative); throws an error naming the path when it is missing. */
  file(path: string): Promise<SourceFile>;
}

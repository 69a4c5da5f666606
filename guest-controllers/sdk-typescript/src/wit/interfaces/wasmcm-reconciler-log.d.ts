declare module 'wasmcm:reconciler/log@0.4.0' {
  /**
   * Log through the host's `tracing`, tagged with the plugin and the key being reconciled.
   */
  export function log(level: Level, message: string): void;
  /**
   * # Variants
   * 
   * ## `"trace"`
   * 
   * ## `"debug"`
   * 
   * ## `"info"`
   * 
   * ## `"warn"`
   * 
   * ## `"error"`
   */
  export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
}

// Types of bin/dist.js for scripts/build-dist.ts and the tests.
export declare const ROOT: string;
export declare const DIST: string;
export declare const STAMP: string;
export declare const SOURCES: string[];
export declare function sourcesNow(): { files: string[]; stamp: { count: number; newest: number } };
export declare function distIsCurrent(): boolean;

// TreeBench for HotSpot: a multi-threaded binary-tree workload in the spirit of the
// stacking experiments of paper 000 (several mutator threads allocating at once, so that
// the parallel GC threads have real work in every pause). Concord's own code.
//
// Each of N threads keeps one long-lived tree of depth L for the whole round, then builds
// and drops I short-lived trees of depth D, walking each to compute a checksum. Every tree
// is built bottom-up; a node at height k (leaves have height 0) stores k, and a tree's
// check is the sum over its nodes of (height + 1). A complete tree of depth d has 2^(d-k)
// nodes of height k, so
//     S(d) = sum_{k=0..d} 2^(d-k) (k+1) = 2^(d+2) - d - 3,
// and one thread adds S(L) + I * S(D) per round. With R rounds the printed checksum is
//     N * R * (S(L) + I * S(D)).
// (`concord jvm bench` checks it with the same formula.)
//
// Usage: java TreeBench [--threads N] [--long-depth L] [--depth D] [--iterations I]
//                       [--rounds R]
// Defaults: 2 threads, L = 18, D = 14, I = 1500, R = 1 (about half a second on two cores).
// Prints exactly two lines:
//     checksum=<sum over all threads and rounds>
//     wall_ms=<milliseconds for all rounds, JVM startup excluded>

final class TreeNode {
    TreeNode left, right;
    int height;

    TreeNode(TreeNode l, TreeNode r, int h) {
        left = l;
        right = r;
        height = h;
    }
}

public class TreeBench {
    static TreeNode build(int depth) {
        if (depth == 0) {
            return new TreeNode(null, null, 0);
        }
        return new TreeNode(build(depth - 1), build(depth - 1), depth);
    }

    static long check(TreeNode n) {
        if (n == null) {
            return 0;
        }
        return n.height + 1 + check(n.left) + check(n.right);
    }

    static int intArg(String[] args, int i) {
        if (i + 1 >= args.length) {
            throw new IllegalArgumentException(args[i] + " needs a value");
        }
        int v = Integer.parseInt(args[i + 1]);
        if (v < 0) {
            throw new IllegalArgumentException(args[i] + " must not be negative");
        }
        return v;
    }

    public static void main(String[] args) throws Exception {
        int threads = 2, longDepth = 18, depth = 14, iterations = 1500, rounds = 1;
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--threads": threads = intArg(args, i); break;
                case "--long-depth": longDepth = intArg(args, i); break;
                case "--depth": depth = intArg(args, i); break;
                case "--iterations": iterations = intArg(args, i); break;
                case "--rounds": rounds = intArg(args, i); break;
                default:
                    System.err.println("TreeBench: unknown argument " + args[i]
                        + " (allowed: --threads, --long-depth, --depth, --iterations, --rounds)");
                    System.exit(2);
            }
        }
        if (threads < 1 || depth > 30 || longDepth > 30) {
            System.err.println("TreeBench: --threads must be at least 1, depths at most 30");
            System.exit(2);
        }
        final int fLong = longDepth, fDepth = depth, fIter = iterations;
        long total = 0;
        long start = System.nanoTime();
        for (int r = 0; r < rounds; r++) {
            final long[] sums = new long[threads];
            Thread[] workers = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                final int slot = t;
                workers[t] = new Thread(() -> {
                    TreeNode longLived = build(fLong);
                    long sum = 0;
                    for (int i = 0; i < fIter; i++) {
                        sum += check(build(fDepth));
                    }
                    sum += check(longLived);
                    sums[slot] = sum;
                }, "tree-" + t);
                workers[t].start();
            }
            for (Thread w : workers) {
                w.join();
            }
            for (long s : sums) {
                total += s;
            }
        }
        long wallMs = (System.nanoTime() - start) / 1_000_000;
        System.out.println("checksum=" + total);
        System.out.println("wall_ms=" + wallMs);
    }
}

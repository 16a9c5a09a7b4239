// GCBench for HotSpot: Concord's reference run of the classic GC benchmark.
//
// Our own code, modelled on the GCBench of Hans Boehm, John Ellis and Kovac
// (the Ellis/Kovac benchmark as adapted by Boehm). It builds the same trees in
// the same order as the original, so the allocation behaviour is the same: the
// only objects allocated are tree nodes, the one long-lived double array, and
// (per round) one thread object per copy. Unlike the original it also computes
// a checksum over every tree it builds, so that a broken collector (or a broken
// benchmark port) is noticed; Concord's own `gcbench` workload computes the
// same checksum with the same algorithm.
//
// Parameters: stretch tree depth 18, long-lived tree depth 16, array of
// 500 000 doubles, short-lived trees of depth 4, 6, ..., 16, each built
// NumIters(d) times top-down (Populate) and NumIters(d) times bottom-up
// (MakeTree).
//
// Checksum: check(n) = sum over the nodes of a tree of (n.i + 1), where a node
// at height k (leaves have height 0) stores i = k. A complete tree of depth d
// has 2^(d-k) nodes of height k, so
//     S(d) = sum_{k=0..d} 2^(d-k) (k+1) = 2^(d+2) - d - 3.
// One copy adds S(18) for the stretch tree, S(16) for the long-lived tree and
// 2 * NumIters(d) * S(d) for d = 4, 6, ..., 16:
//     S(18)                         =  1 048 555
//     S(16)                         =    262 125
//     d= 4: 2 * 33824 * 57          =  3 855 936
//     d= 6: 2 *  8256 * 247         =  4 078 464
//     d= 8: 2 *  2052 * 1013        =  4 157 352
//     d=10: 2 *   512 * 4083        =  4 180 992
//     d=12: 2 *   128 * 16369       =  4 190 464
//     d=14: 2 *    32 * 65519       =  4 193 216
//     d=16: 2 *     8 * 262125      =  4 194 000
// Expected checksum for one copy (1 copy x 1 round): 30161104
// (confirmed by running `java GCBench`). With --copies N --rounds R the
// printed checksum is N * R * 30161104.
//
// Usage: java GCBench [--copies N] [--rounds R]
// Prints exactly two lines:
//     checksum=<sum over all copies and rounds>
//     wall_ms=<milliseconds for all rounds, JVM startup excluded>

class Node {
    Node left, right;
    int i, j;

    Node(Node l, Node r) {
        left = l;
        right = r;
    }

    Node() {
    }
}

public class GCBench {
    public static final int kStretchTreeDepth = 18;   // about 16 MB
    public static final int kLongLivedTreeDepth = 16; // about 4 MB
    public static final int kArraySize = 500000;      // about 4 MB
    public static final int kMinTreeDepth = 4;
    public static final int kMaxTreeDepth = 16;

    /** Expected checksum of one copy (see the derivation above). */
    public static final long kExpectedChecksumPerCopy = 30161104L;

    // Nodes used by a tree of a given depth.
    static int TreeSize(int i) {
        return ((1 << (i + 1)) - 1);
    }

    // Number of iterations to use for a given tree depth.
    static int NumIters(int i) {
        return 2 * TreeSize(kStretchTreeDepth) / TreeSize(i);
    }

    // Build the tree top-down.
    static void Populate(int iDepth, Node thisNode) {
        if (iDepth <= 0) {
            return;
        }
        iDepth--;
        thisNode.left = new Node();
        thisNode.right = new Node();
        thisNode.left.i = iDepth;
        thisNode.right.i = iDepth;
        Populate(iDepth, thisNode.left);
        Populate(iDepth, thisNode.right);
    }

    // Build the tree bottom-up.
    static Node MakeTree(int iDepth) {
        if (iDepth <= 0) {
            return new Node();
        }
        Node n = new Node(MakeTree(iDepth - 1), MakeTree(iDepth - 1));
        n.i = iDepth;
        return n;
    }

    // Structural check plus checksum: every node of height i > 0 has two
    // children of height i - 1, every node of height 0 has none.
    static long check(Node n) {
        Node l = n.left;
        Node r = n.right;
        if (n.i > 0) {
            if (l == null || r == null || l.i != n.i - 1 || r.i != n.i - 1) {
                throw new Error("corrupt tree");
            }
            return (long) (n.i + 1) + check(l) + check(r);
        }
        if (n.i != 0 || l != null || r != null) {
            throw new Error("corrupt tree");
        }
        return 1L;
    }

    // Build NumIters(depth) trees top-down, then as many bottom-up.
    static long TimeConstruction(int depth) {
        long checksum = 0;
        int iNumIters = NumIters(depth);
        for (int i = 0; i < iNumIters; ++i) {
            Node tempTree = new Node();
            tempTree.i = depth;
            Populate(depth, tempTree);
            checksum += check(tempTree);
            tempTree = null;
        }
        for (int i = 0; i < iNumIters; ++i) {
            Node tempTree = MakeTree(depth);
            checksum += check(tempTree);
            tempTree = null;
        }
        return checksum;
    }

    // One copy of the benchmark; returns its checksum.
    static long runOneCopy() {
        long checksum = 0;

        // Stretch the memory space quickly.
        Node tempTree = MakeTree(kStretchTreeDepth);
        checksum += check(tempTree);
        tempTree = null;

        // Create a long-lived object.
        Node longLivedTree = new Node();
        longLivedTree.i = kLongLivedTreeDepth;
        Populate(kLongLivedTreeDepth, longLivedTree);

        // Create a long-lived array, filling half of it.
        double[] array = new double[kArraySize];
        for (int i = 0; i < kArraySize / 2; ++i) {
            array[i] = 1.0 / i;
        }

        for (int d = kMinTreeDepth; d <= kMaxTreeDepth; d += 2) {
            checksum += TimeConstruction(d);
        }

        checksum += check(longLivedTree);
        if (longLivedTree == null || array[1000] != 1.0 / 1000) {
            throw new Error("long-lived data lost");
        }
        return checksum;
    }

    // Runs `copies` independent copies, one per thread; returns the sum of
    // their checksums.
    static long runRound(int copies) throws InterruptedException {
        final long[] sums = new long[copies];
        final Throwable[] failures = new Throwable[copies];
        Thread[] threads = new Thread[copies];
        for (int c = 0; c < copies; ++c) {
            final int id = c;
            threads[c] = new Thread(() -> {
                try {
                    sums[id] = runOneCopy();
                } catch (Throwable t) {
                    failures[id] = t;
                }
            }, "gcbench-" + c);
            threads[c].start();
        }
        long total = 0;
        for (int c = 0; c < copies; ++c) {
            threads[c].join();
            if (failures[c] != null) {
                throw new Error("copy " + c + " failed", failures[c]);
            }
            total += sums[c];
        }
        return total;
    }

    static int parsePositive(String flag, String value) {
        int v;
        try {
            v = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            v = 0;
        }
        if (v < 1) {
            usage(flag + " needs a positive integer, got '" + value + "'");
        }
        return v;
    }

    static void usage(String message) {
        System.err.println("GCBench: " + message);
        System.err.println("usage: java GCBench [--copies N] [--rounds R]");
        System.exit(2);
    }

    public static void main(String[] args) throws InterruptedException {
        int copies = 1;
        int rounds = 1;
        for (int a = 0; a < args.length; ++a) {
            String flag = args[a];
            if (flag.equals("--copies") || flag.equals("--rounds")) {
                if (a + 1 >= args.length) {
                    usage(flag + " needs a value");
                }
                int v = parsePositive(flag, args[++a]);
                if (flag.equals("--copies")) {
                    copies = v;
                } else {
                    rounds = v;
                }
            } else {
                usage("unknown argument '" + flag + "'");
            }
        }

        long checksum = 0;
        long start = System.nanoTime();
        for (int r = 0; r < rounds; ++r) {
            checksum += runRound(copies);
        }
        long elapsed = System.nanoTime() - start;

        System.out.println("checksum=" + checksum);
        System.out.println("wall_ms=" + String.format(java.util.Locale.ROOT, "%.3f", elapsed / 1e6));
    }
}

// binary-trees for HotSpot: the Computer Language Benchmarks Game program, one thread, so that
// issue 13's table compares Concord's `binary-trees` workload with HotSpot on the same work.
// Concord's own code.
//
// With min depth 4 and max depth max(6, N): a stretch tree of depth max + 1 is built and
// checked; a long-lived tree of depth max is built; for d = 4, 6, ..., max, 1 << (max - d + 4)
// trees of depth d are built bottom-up and checked; last the long-lived tree is checked.
// check(node) counts the nodes (1 + check(left) + check(right)); a node has both children or
// none. A tree of depth d has 2^(d+1) - 1 nodes, so the sum of every printed check is known in
// advance: it is what concord_workloads::binary_trees::expected_checksum(N) returns
// (68332206 for N = 18), and this program prints it as `checksum=`.
//
// Usage: java -XX:+UseParallelGC -Xmx96m -Xms96m -XX:ParallelGCThreads=2 BinaryTrees.java [N]
// N is the depth, 4..30, default 18. Prints the program's usual lines, then
//     checksum=<sum of the checks above>
//     wall_ms=<milliseconds from the first tree to the last check, JVM startup excluded>

public class BinaryTrees {
    static final int MIN_DEPTH = 4;
    static final int MAX_N = 30;

    static final class Node {
        final Node left, right;

        Node(Node left, Node right) {
            this.left = left;
            this.right = right;
        }

        // Children first, as the Rust workloads build them.
        static Node bottomUp(int depth) {
            if (depth == 0) {
                return new Node(null, null);
            }
            Node l = bottomUp(depth - 1);
            Node r = bottomUp(depth - 1);
            return new Node(l, r);
        }

        long check() {
            if (left == null) {
                return 1;
            }
            return 1 + left.check() + right.check();
        }
    }

    public static void main(String[] args) {
        int n = 18;
        if (args.length > 1) {
            System.err.println("BinaryTrees: expected at most one argument, the depth N (4.." + MAX_N + ")");
            System.exit(2);
        }
        if (args.length == 1) {
            try {
                n = Integer.parseInt(args[0]);
            } catch (NumberFormatException e) {
                n = -1;
            }
            if (n < MIN_DEPTH || n > MAX_N) {
                System.err.println("BinaryTrees: depth '" + args[0] + "' is not allowed: give a whole number from "
                    + MIN_DEPTH + " to " + MAX_N);
                System.exit(2);
            }
        }
        int maxDepth = Math.max(MIN_DEPTH + 2, n);
        int stretchDepth = maxDepth + 1;

        long start = System.nanoTime();
        StringBuilder out = new StringBuilder();
        long checksum = 0;

        long stretch = Node.bottomUp(stretchDepth).check();
        checksum += stretch;
        out.append("stretch tree of depth ").append(stretchDepth).append("\t check: ").append(stretch).append('\n');

        Node longLived = Node.bottomUp(maxDepth);
        for (int d = MIN_DEPTH; d <= maxDepth; d += 2) {
            long iterations = 1L << (maxDepth - d + MIN_DEPTH);
            long check = 0;
            for (long i = 0; i < iterations; i++) {
                check += Node.bottomUp(d).check();
            }
            checksum += check;
            out.append(iterations).append("\t trees of depth ").append(d).append("\t check: ").append(check)
                .append('\n');
        }
        long longCheck = longLived.check();
        checksum += longCheck;
        out.append("long lived tree of depth ").append(maxDepth).append("\t check: ").append(longCheck).append('\n');
        double wallMs = (System.nanoTime() - start) / 1e6;

        System.out.print(out);
        System.out.println("checksum=" + checksum);
        System.out.printf("wall_ms=%.1f%n", wallMs);
    }
}

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
// Usage: java -XX:+UseParallelGC -Xmx96m -Xms96m -XX:ParallelGCThreads=2 BinaryTrees.java [N [ROUNDS]]
// N is the depth, 4..30, default 18; ROUNDS (1..1000, default 1) runs the whole program that
// many times in one JVM, as Concord's --rounds does. Prints the last round's usual lines, then
//     checksum=<sum of the checks above, over every round>
//     wall_ms=<milliseconds from the first tree to the last check, JVM startup excluded>
// `concord vs-hotspot` runs it (compiled with javac) and reads those two lines.

public class BinaryTrees {
    static final int MIN_DEPTH = 4;
    static final int MAX_N = 30;
    static final int MAX_ROUNDS = 1000;

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

    // One round at depth maxDepth: its checksum; the program's lines go to `out`.
    static long round(int maxDepth, StringBuilder out) {
        int stretchDepth = maxDepth + 1;
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
        return checksum;
    }

    // The argument `text` as a whole number in min..max, or exit 2 naming it.
    static int wholeIn(String what, String text, int min, int max) {
        int v;
        try {
            v = Integer.parseInt(text);
        } catch (NumberFormatException e) {
            v = min - 1;
        }
        if (v < min || v > max) {
            System.err.println("BinaryTrees: " + what + " '" + text + "' is not allowed: give a whole number from "
                + min + " to " + max);
            System.exit(2);
        }
        return v;
    }

    public static void main(String[] args) {
        int n = 18;
        int rounds = 1;
        if (args.length > 2) {
            System.err.println("BinaryTrees: expected at most two arguments, the depth N (" + MIN_DEPTH + ".." + MAX_N
                + ") and the rounds (1.." + MAX_ROUNDS + ")");
            System.exit(2);
        }
        if (args.length >= 1) {
            n = wholeIn("depth", args[0], MIN_DEPTH, MAX_N);
        }
        if (args.length == 2) {
            rounds = wholeIn("rounds", args[1], 1, MAX_ROUNDS);
        }
        int maxDepth = Math.max(MIN_DEPTH + 2, n);

        long start = System.nanoTime();
        StringBuilder out = new StringBuilder();
        long checksum = 0;
        for (int r = 0; r < rounds; r++) {
            out.setLength(0);
            checksum += round(maxDepth, out);
        }
        double wallMs = (System.nanoTime() - start) / 1e6;

        System.out.print(out);
        System.out.println("checksum=" + checksum);
        System.out.println("wall_ms=" + String.format(java.util.Locale.ROOT, "%.3f", wallMs));
    }
}

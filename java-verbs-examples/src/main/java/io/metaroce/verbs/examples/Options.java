package io.metaroce.verbs.examples;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A small getopt: short options ({@code -s 4096}, {@code -s4096}, {@code -e}), their long names
 * ({@code --size=4096}, {@code --size 4096}), and positional arguments.
 *
 * <p><b>Thread safety:</b> mutable while parsing; confined to the thread that parses and runs.
 */
final class Options {

    private final Map<Character, String> values = new HashMap<>();
    private final List<String> positional = new ArrayList<>();

    /**
     * @param withArg short options taking an argument
     * @param flags short options without one
     * @param longNames long name to short option
     */
    Options(String[] args, String withArg, String flags, Map<String, Character> longNames) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("--") && a.length() > 2) {
                String name = a.substring(2);
                String value = null;
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                Character c = longNames.get(name);
                if (c == null) {
                    throw new IllegalArgumentException("unknown option --" + name);
                }
                if (withArg.indexOf(c) >= 0) {
                    if (value == null) {
                        if (++i >= args.length) {
                            throw new IllegalArgumentException("option --" + name + " needs a value");
                        }
                        value = args[i];
                    }
                    values.put(c, value);
                } else {
                    values.put(c, "");
                }
            } else if (a.startsWith("-") && a.length() > 1) {
                for (int j = 1; j < a.length(); j++) {
                    char c = a.charAt(j);
                    if (withArg.indexOf(c) >= 0) {
                        String value = a.substring(j + 1);
                        if (value.isEmpty()) {
                            if (++i >= args.length) {
                                throw new IllegalArgumentException("option -" + c + " needs a value");
                            }
                            value = args[i];
                        }
                        values.put(c, value);
                        break;
                    } else if (flags.indexOf(c) >= 0) {
                        values.put(c, "");
                    } else {
                        throw new IllegalArgumentException("invalid option -- '" + c + "'");
                    }
                }
            } else {
                positional.add(a);
            }
        }
    }

    boolean has(char c) {
        return values.containsKey(c);
    }

    String get(char c, String def) {
        return values.getOrDefault(c, def);
    }

    /** C strtol(…, 0) style: decimal, 0x hex or leading-0 octal. */
    long number(char c, long def) {
        String v = values.get(c);
        if (v == null) {
            return def;
        }
        try {
            if (v.startsWith("0x") || v.startsWith("0X")) {
                return Long.parseLong(v.substring(2), 16);
            }
            if (v.length() > 1 && v.startsWith("0")) {
                return Long.parseLong(v.substring(1), 8);
            }
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option -" + c + ": not a number: " + v);
        }
    }

    int integer(char c, int def) {
        return Math.toIntExact(number(c, def));
    }

    List<String> positional() {
        return positional;
    }

    static Map<String, Character> longs(Object... pairs) {
        Map<String, Character> m = new HashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put((String) pairs[i], (Character) pairs[i + 1]);
        }
        return m;
    }
}

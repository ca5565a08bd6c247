package io.metaroce.nic;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.reflect.Field;
import picocli.CommandLine.Option;

/**
 * The values an integer {@link Option} of mrce-nicd accepts, MIN..MAX inclusive; {@link #check}
 * refuses any other with "OPTION must be MIN..MAX". Unset (null) options are not checked.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.FIELD)
@interface Range {
    long min();

    long max() default Long.MAX_VALUE;

    /** Checks every {@code @Range} option of {@code options}; throws with the first one out of range. */
    final class Checker {
        private Checker() {}

        static void check(Object options) {
            for (Field f : options.getClass().getDeclaredFields()) {
                Range r = f.getAnnotation(Range.class);
                Option o = f.getAnnotation(Option.class);
                if (r == null || o == null) {
                    continue;
                }
                Object v;
                try {
                    v = f.get(options);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
                if (v != null && (((Number) v).longValue() < r.min() || ((Number) v).longValue() > r.max())) {
                    throw new IllegalArgumentException(o.names()[0] + " must be " + r.min()
                            + (r.max() == Long.MAX_VALUE ? " or more" : ".." + r.max()));
                }
            }
        }
    }
}

package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.Errno;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import org.junit.jupiter.api.Test;

/**
 * The binding depends on no daemon module, so it names its few errno values itself
 * ({@code Native.Errno}, {@code DaemonControl.Errnos}); each must be the value of the same name in
 * the daemon's one table ({@code io.metaroce.abi.Errno}, on the test class path only).
 */
class ErrnoAgreementTest {

    private static int check(Class<?> table) throws ReflectiveOperationException {
        int checked = 0;
        for (Field f : table.getDeclaredFields()) {
            if (!Modifier.isStatic(f.getModifiers()) || f.getType() != int.class) {
                continue;
            }
            f.setAccessible(true);
            Field theirs = Errno.class.getField(f.getName());
            assertThat(f.getInt(null))
                    .as(table.getSimpleName() + "." + f.getName())
                    .isEqualTo(theirs.getInt(null));
            checked++;
        }
        return checked;
    }

    @Test
    void everyErrnoNameHasTheDaemonsValue() throws ReflectiveOperationException {
        assertThat(check(Class.forName("io.metaroce.verbs.Native$Errno"))).isGreaterThanOrEqualTo(7);
        assertThat(check(Class.forName("io.metaroce.verbs.cm.DaemonControl$Errnos")))
                .isGreaterThanOrEqualTo(14);
    }
}
